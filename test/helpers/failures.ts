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
 * A test database behind a switch: while `down` is set, every statement is refused as the pg
 * adapter reports a server that cannot be reached. What the switch leaves alone: transactions
 * already open, and LISTEN.
 */
export async function switchableDatabase(): Promise<{ open: () => Promise<Db>; setDown(down: boolean): void }> {
  const database = await createTestDatabase();
  let down = false;
  const refused = () => Promise.reject(new DbError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', undefined, undefined));
  const db: Db = {
    ...database.db,
    query: (text, values, options) => (down ? refused() : database.db.query(text, values, options)),
    exec: (sql) => (down ? refused() : database.db.exec(sql)),
    transaction: (fn) => (down ? refused() : database.db.transaction(fn)),
    // The environment closes it: the database goes with it.
    close: () => database.drop(),
  };
  return { open: async () => db, setDown: (value) => (down = value) };
}
