// Retention across instances (issue 32): two apps on one PostgreSQL database, each with its own
// schedule, erase a backlog of closed cases between them, and no case is erased twice (the
// retention's advisory lock). PostgreSQL only: an embedded database belongs to one process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOpenDb } from '../src/platform/environments.js';
import { admin } from './helpers/admin.js';
import { createTestApp, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { plantCase } from './helpers/cases.js';
import { sealedAndVerified, traces } from './helpers/erasure-checks.js';
import { signedIn, type Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

const CASES = 12;

describe.runIf(onPostgres)('retention on two instances of one PostgreSQL database', () => {
  let first: TestApp;
  let second: TestApp;
  let director: Person;

  beforeAll(async () => {
    // Instances of one environment on PostgreSQL share its pseudonym key, as an operator sets it.
    const env = { RETENTION_DAYS: '7', PRODUCTION_PSEUDONYM_KEY: 'retention-instances-pseudonym-key-0123456789' };
    first = await createTestApp({ env, retentionIntervalMs: 20 });
    const shared = { ...env, PRODUCTION_DATABASE_URL: first.urls.production! };
    second = await createTestApp({ env: shared, retentionIntervalMs: 20, openDb: { production: defaultOpenDb(testConfig(shared), silentLog) } });
    director = await admin(first);
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('erases every closed case once, whichever instance takes it', async () => {
    const agent = (await signedIn(first, { name: 'Shared Staff' })).agent;
    const staff = { chat_id: agent.chat_id, name: agent.name ?? 'Shared Staff' };
    const planted = [];
    for (let i = 0; i < CASES; i++) planted.push(await plantCase(first.db.production, staff, { closedDaysAgo: 30 }));

    const erased = async () => (await first.db.production.query<{ report_id: string }>('select report_id from case_erasures order by id')).rows.map((r) => r.report_id);
    const deadline = Date.now() + 60_000; // a loaded CI machine: every case still erased, once
    while ((await erased()).length < CASES && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    // A few more passes of both: a case erased twice would show up as a second row.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await erased()).sort()).toEqual(planted.map((c) => c.reportId).sort());
    const { rows } = await first.db.production.query<{ n: number }>(`select count(*)::int as n from audit_log where action = 'admin.case_erased'`);
    expect(rows[0]!.n).toBe(CASES);

    for (const c of planted) expect(await traces(first.db.production, c.secrets)).toEqual([]);
    // Erased before the sealer reached them: sealed as erased, nothing to report as erased.
    await sealedAndVerified(first.db.production);

    // Each instance's health counts what it erased itself: together, every case once.
    const counts = [];
    for (const t of [first, second]) {
      const res = await t.app.inject({ method: 'GET', url: '/admin/health', headers: director.headers });
      expect(res.statusCode).toBe(200);
      expect(res.json().database.retention).toMatchObject({ days: 7, cases_waiting: 0, last_error: null });
      counts.push(res.json().database.retention.cases_erased as number);
    }
    expect(counts[0]! + counts[1]!).toBe(CASES);
  }, 90_000);
});
