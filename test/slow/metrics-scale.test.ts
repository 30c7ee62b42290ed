// A scrape's database read at a million rows (issue 20): the plan PostgreSQL runs for it, custom
// and generic (the statement is prepared, so after a few executions the server may keep a generic
// plan), has no sequential scan of the queues or the history, and touches a few dozen pages
// however large the tables grow. Proved with EXPLAIN (ANALYZE, BUFFERS), not a timer: the machine
// is shared. PostgreSQL only: the planner and its buffer counts are the server's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_READ_SQL } from '../../src/admin/metrics.js';
import { HEALTH_COUNT_CAP } from '../../src/admin/health-checks.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../helpers/stores.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

describe.runIf(onPostgres)('the scrape read on a million-row database (PostgreSQL)', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    const db = database.db;
    await db.query(`insert into reports (report_id, reporter, reported, reason, notes, evidence) values ('SCALE-1', '1', '2', 'Scale', '', '')`);
    // 800,000 finished actions and 200,000 finished deliveries (the history that grows), a few
    // of each status still in the queues, and 20,000 recorded incidents.
    // One statement, one transaction, at most 100,000 rows each: on a shared PostgreSQL server a
    // long write transaction holds back every other database's audit sealing (transaction ids are
    // server-wide), and the chain tests of other files wait for theirs.
    for (let from = 1; from <= 800_000; from += 100_000) {
      await db.query(
        `insert into report_actions (report_id, kind, queue, status, attempts, completed_at, created_at)
           select 'SCALE-1', 'claim', 'operator', case when g % 2 = 0 then 'success' else 'cancelled' end, 1, now(), now() - make_interval(secs => g)
           from generate_series($1::int, $1::int + 99999) g`,
        [from],
      );
    }
    await db.query(`
      insert into report_actions (report_id, kind, queue, status, attempts, claimed_at)
        select 'SCALE-1', 'claim', 'supervisor', s, case when s = 'pending' then 0 else 1 end, case when s = 'processing' then now() end
        from unnest(array['pending', 'pending', 'processing', 'failed', 'failed', 'failed']) s`);
    for (let from = 1; from <= 200_000; from += 100_000) {
      await db.query(
        `insert into discipline_deliveries (kind, user_id, status, attempts, completed_at)
           select 'user_lookup', (100000000 + g)::text, 'success', 1, now() from generate_series($1::int, $1::int + 99999) g`,
        [from],
      );
    }
    await db.query(`
      insert into discipline_deliveries (kind, user_id, status, attempts)
        select 'user_lookup', (900000000 + g)::text, case when g = 1 then 'processing' else 'pending' end, 0 from generate_series(1, 4) g`);
    await db.query(`
      insert into health_incidents (status_before, status_after, correlation_id, created_at)
        select case when g % 2 = 0 then 'ok' else 'warn' end, case when g % 2 = 0 then 'warn' else 'ok' end, 'scale-' || g, now() - make_interval(secs => g)
        from generate_series(1, 20000) g`);
    await db.exec('vacuum analyze report_actions, discipline_deliveries, health_incidents, health_state');
  }, 240_000);
  afterAll(() => database?.drop());

  it('reads the right figures', async () => {
    const { rows } = await database.db.query<Record<string, unknown>>(METRICS_READ_SQL, [HEALTH_COUNT_CAP]);
    expect(rows[0]).toMatchObject({
      actions_pending: 2,
      actions_processing: 1,
      actions_failed: 3,
      deliveries_pending: 3,
      deliveries_processing: 1,
      deliveries_failed: 0,
      health_status: 'ok',
      health_incidents: HEALTH_COUNT_CAP,
    });
  });

  for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
    it(`scans no large table and touches a few dozen pages (${mode})`, async () => {
      const plan = await database.db.transaction(async (tx) => {
        await tx.query(`set local plan_cache_mode = ${mode}`);
        await tx.exec(`prepare metrics_scale(int) as ${METRICS_READ_SQL}`);
        const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (analyze, buffers, format json) execute metrics_scale(${HEALTH_COUNT_CAP})`);
        await tx.exec('deallocate metrics_scale');
        return rows[0]!['QUERY PLAN'][0].Plan;
      });
      const all = nodes(plan);
      const scans = all.filter((n) => n['Relation Name'] !== undefined).map((n) => `${n['Node Type']} on ${n['Relation Name']}`);
      // health_state is one row by construction (check (id)): reading it whole is one page.
      expect(scans.filter((s) => s.startsWith('Seq Scan') && s !== 'Seq Scan on health_state')).toEqual([]);
      expect(scans.some((s) => s.endsWith('report_actions'))).toBe(true);
      expect(scans.some((s) => s.endsWith('discipline_deliveries'))).toBe(true);
      // Pages of the root node: every page the statement touched, cached or read. The incidents
      // count stops at its cap (10,000 index entries: about 30 pages of an index-only scan).
      const pages = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
      expect(pages).toBeLessThan(200);
    }, 60_000);
  }
});
