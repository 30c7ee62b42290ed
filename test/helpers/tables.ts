// Every table of a database, read whole from the catalog (not from a list kept by hand), for tests
// that compare two databases: a backup and its restore, an embedded environment and its move.
import type { Db } from '../../src/platform/db/types.js';

/** Table name -> its rows as JSON text (UTC timestamps), sorted: equal when the tables are equal. */
export async function everyTable(db: Db): Promise<Record<string, string[]>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname`,
  );
  const result: Record<string, string[]> = {};
  await db.transaction(async (tx) => {
    await tx.exec("set local timezone = 'UTC'");
    for (const { name } of tables) {
      const { rows } = await tx.query<{ r: string }>(`select row_to_json(t)::text as r from "${name}" t`);
      result[name] = rows.map((row) => row.r).sort();
    }
  });
  return result;
}

/** Table name -> its number of rows, for every table: tests that show a request writes nothing. */
export async function rowCounts(db: Db): Promise<Record<string, number>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname`,
  );
  const { rows } = await db.query<Record<string, number>>(`select ${tables.map(({ name }) => `(select count(*)::int from "${name}") as "${name}"`).join(', ')}`);
  return rows[0]!;
}
