// Failures on demand: late in a transaction, to prove that nothing of a refused change is left;
// a database that cannot be reached.
import { DbError, type Db } from '../../src/platform/db/types.js';
import { createTestDatabase } from './stores.js';

/**
 * Inserts into `tables` of rows matching `condition` (SQL over `new`) raise, after the earlier
 * writes of their transaction have gone through. `name` names the trigger function.
 */
export async function refuseInserts(db: Db, name: string, condition: string, tables: readonly string[]): Promise<void> {
  await db.exec(`
    create function ${name}() returns trigger language plpgsql as $$
    begin
      if ${condition} then raise exception 'refused for the test'; end if;
      return new;
    end $$;
    ${tables.map((table) => `create trigger ${name} before insert on ${table} for each row execute function ${name}();`).join('\n')}`);
}

/**
 * A database behind a switch: while `down` is set, every statement is refused as the pg adapter
 * reports a server that cannot be reached. What the switch leaves alone: transactions already
 * open, and LISTEN.
 */
export function switchable(inner: Db, close: () => Promise<void> = () => inner.close()): { db: Db; setDown(down: boolean): void; refused(): readonly string[] } {
  let down = false;
  // What was refused: each statement's text, a transaction as "transaction".
  const refusals: string[] = [];
  const refused = (what: string) => {
    refusals.push(what);
    return Promise.reject(new DbError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', undefined, undefined));
  };
  const db: Db = {
    ...inner,
    query: (text, values, options) => (down ? refused(text) : inner.query(text, values, options)),
    exec: (sql) => (down ? refused(sql) : inner.exec(sql)),
    transaction: (fn) => (down ? refused('transaction') : inner.transaction(fn)),
    close,
  };
  return { db, setDown: (value) => (down = value), refused: () => refusals };
}

/** A test database of its own behind a switch (switchable), dropped when its environment closes it. */
export async function switchableDatabase(): Promise<{ open: () => Promise<Db>; setDown(down: boolean): void }> {
  const database = await createTestDatabase();
  const { db, setDown } = switchable(database.db, () => database.drop());
  return { open: async () => db, setDown };
}
