// A failure late in a transaction, on demand, to prove that nothing of a refused change is left.
import type { Db } from '../../src/platform/db/types.js';

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
