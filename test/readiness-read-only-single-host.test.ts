// Found by the adversarial review of issue 40, failing before the fix: GET /ready on a read-only server calls db.reconnect() every time. On a
// single-host URL there is nowhere else to go, yet every poll marks every pooled connection for
// replacement: each poll (load balancer, orchestrator) costs the pool a fresh connection per
// checkout, and reads that the read-only server serves fine pay a new backend each time.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOpenDb } from '../src/platform/environment-db.js';
import { createTestApp, PRODUCTION_KEY, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './helpers/stores.js';

describe.runIf(onPostgres)('/ready on a read-only single-host server', () => {
  let database: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { PRODUCTION_DATABASE_URL: database.url! };
    const config = testConfig(env);
    t = await createTestApp({ env, openDb: { production: (e) => defaultOpenDb(config, silentLog)(e) } });
  });
  afterAll(async () => {
    await t?.close();
    await database.drop();
  });

  it('polling /ready does not replace the pool connection used by reads the server still serves', async () => {
    const headers = { authorization: PRODUCTION_KEY };
    const created = await t.app.inject({ method: 'POST', url: '/reports/create', headers, payload: { report_id: 'RVR-1', reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' } });
    expect(created.statusCode).toBe(201);
    const name = new URL(database.url!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    // The server fenced read-only (as a fenced primary or a standby promoted elsewhere is).
    await admin.query(`alter database ${name} set default_transaction_read_only = on`);
    // Its sessions start again (the fence restarts them), now read-only.
    await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid() and application_name like 'case-management-service%'", [name]);
    for (let i = 0; i < 20 && (await t.app.inject({ method: 'GET', url: '/reports/RVR-1', headers })).statusCode !== 200; i++);
    const pids = new Set<number>();
    try {
      for (let i = 0; i < 10; i++) {
        await t.app.inject({ url: '/ready' });
        const read = await t.app.inject({ method: 'GET', url: '/reports/RVR-1', headers });
        expect(read.statusCode).toBe(200);
        const { rows } = await admin.query<{ pid: number }>("select pid from pg_stat_activity where datname = $1 and application_name = 'case-management-service:production'", [name]);
        rows.forEach((r) => pids.add(r.pid));
      }
    } finally {
      await admin.query(`alter database ${name} reset default_transaction_read_only`);
      await admin.end();
    }
    // Actual: about one new server process per poll (11+ distinct backends for 10 polls).
    expect(pids.size).toBeLessThanOrEqual(3);
  }, 30_000);
});
