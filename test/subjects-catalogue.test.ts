// The personal-data catalogue (issue 32, src/admin/subjects/catalogue.ts) is complete and cheap:
// every table with a text or json column (read from the catalog, not from a list kept by hand) is
// in it or declared to hold no personal data with a reason, so a new table cannot be forgotten; and
// every lookup of one person is served by an index on every table that grows with the work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUE, NO_PERSONAL_DATA, SMALL_TABLES } from '../src/admin/subjects/catalogue.js';
import { bind, DELETED_REPORT_IDS_SQL, REPORT_IDS_SQL } from '../src/admin/subjects/queries.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/stores.js';

let d: TestDatabase;
beforeAll(async () => {
  d = await createTestDatabase();
});
afterAll(() => d.drop());

async function columnsByTable(types: string[]): Promise<Map<string, string[]>> {
  const { rows } = await d.db.query<{ table: string; column: string }>(
    `select c.table_name as table, c.column_name as column from information_schema.columns c
       join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
      where c.table_schema = 'public' and ($1::text[] is null or c.data_type = any($1::text[])) order by 1, 2`,
    [types.length === 0 ? null : types],
  );
  const map = new Map<string, string[]>();
  for (const r of rows) map.set(r.table, [...(map.get(r.table) ?? []), r.column]);
  return map;
}

describe(`the personal-data catalogue on ${storeName}`, () => {
  it('covers every table with a text or json column, or says why it holds no personal data', async () => {
    const withText = [...(await columnsByTable(['text', 'character varying', 'json', 'jsonb'])).keys()];
    const catalogued = new Set(CATALOGUE.map((e) => e.table));
    const uncovered = withText.filter((t) => !catalogued.has(t) && !(t in NO_PERSONAL_DATA));
    expect(uncovered).toEqual([]);
    // Neither list names a table twice over or one that does not exist.
    expect(Object.keys(NO_PERSONAL_DATA).filter((t) => catalogued.has(t))).toEqual([]);
    const all = await columnsByTable([]);
    expect([...catalogued, ...Object.keys(NO_PERSONAL_DATA)].filter((t) => !all.has(t))).toEqual([]);
    for (const reason of Object.values(NO_PERSONAL_DATA)) expect(reason.length).toBeGreaterThan(10);
  });

  it("names only real columns, and every column an erasure reads its owner from", async () => {
    const all = await columnsByTable([]);
    for (const entry of CATALOGUE) {
      const columns = all.get(entry.table)!;
      for (const key of entry.key) expect(columns, `${entry.kind}: key ${key}`).toContain(key);
      for (const [column, role] of Object.entries(entry.columns)) {
        expect(columns, `${entry.kind}: ${column}`).toContain(column);
        if (typeof role === 'object' && !role.of.startsWith('_')) expect(columns, `${entry.kind}: owner ${role.of}`).toContain(role.of);
      }
    }
  });

  it('finds a person through indexes: no sequential scan on a table that grows', async () => {
    const params = ['300000000000000001', ['R-1', 'R-2'], [1, 2], ['R-1', 'R-3']];
    const plans: Record<string, string> = {};
    await d.db.transaction(async (tx) => {
      // Off, the planner still scans a table it has no index for; an index it can use, it uses.
      await tx.query('set local enable_seqscan = off');
      for (const [name, sql] of [['report ids', REPORT_IDS_SQL], ['deleted report ids', DELETED_REPORT_IDS_SQL], ...CATALOGUE.map((e) => [e.kind, e.sql])] as const) {
        const [text, values] = bind(sql, params);
        const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`explain ${text}`, values);
        plans[name] = rows.map((r) => r['QUERY PLAN']).join('\n');
      }
    });
    const scans = Object.entries(plans).flatMap(([name, plan]) =>
      [...plan.matchAll(/Seq Scan on (\w+)/g)].map((m) => m[1]!).filter((table) => !SMALL_TABLES.has(table)).map((table) => `${name}: ${table}`),
    );
    expect(scans, JSON.stringify(plans, null, 1)).toEqual([]);
    expect(plans.events).toMatch(/events_search_text_trgm_idx/);
    expect(plans.audit_log).toMatch(/audit_log_search_text_trgm_idx/);
  });
});
