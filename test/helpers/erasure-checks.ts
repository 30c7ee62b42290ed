// What every erasure test asks of the database afterwards (issue 32): where a value still occurs
// in any text or json column of any table (read from the catalog), and that the chain verifies.
import { expect } from 'vitest';
import { sealAvailable } from '../../src/platform/audit-chain/seal.js';
import { pendingRows, verifyChain } from '../../src/platform/audit-chain/verify.js';
import type { Db } from '../../src/platform/db/types.js';

/** Every text, varchar and json(b) column of every table, from the catalog. */
export async function textColumns(db: Db): Promise<{ table: string; column: string }[]> {
  const { rows } = await db.query<{ table: string; column: string }>(
    `select c.table_name as table, c.column_name as column from information_schema.columns c
       join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
      where c.table_schema = 'public' and c.data_type in ('text', 'character varying', 'json', 'jsonb') and c.is_generated = 'NEVER'
      order by 1, 2`,
  );
  return rows;
}

/** Where any of `needles` still occurs: "table.column: needle". */
export async function traces(db: Db, needles: string[]): Promise<string[]> {
  const found: string[] = [];
  // One statement per column for all the needles (in their order), not one per needle.
  for (const { table, column } of await textColumns(db)) {
    const { rows } = await db.query<{ needle: string }>(
      `select n.needle from unnest($1::text[]) with ordinality as n(needle, i)
        where exists (select 1 from "${table}" t where strpos(t."${column}"::text, n.needle) > 0) order by n.i`,
      [needles],
    );
    for (const { needle } of rows) found.push(`${table}.${column}: ${needle}`);
  }
  return found;
}

/** Seals every row written so far and verifies the whole chain. */
export async function sealedAndVerified(db: Db) {
  const deadline = Date.now() + 20_000;
  while ((await sealAvailable(db), await pendingRows(db)) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const v = await verifyChain(db);
  expect(v, JSON.stringify(v.problem)).toMatchObject({ ok: true, problem: null, pending: 0 });
  return v;
}
