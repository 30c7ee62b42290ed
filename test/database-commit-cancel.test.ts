// Found by the adversarial review of issue 40, failing before the fix: the COMMIT bound (postgres.ts `commit`) cancels the commit's server process
// with pg_cancel_backend from a NEW connection, and does not check that the commit is still running
// when the cancel lands. A commit that ends just after DATABASE_STATEMENT_TIMEOUT_MS (here: a
// deferred trigger; in production, a sync standby that answers late) releases its pooled
// connection, the next request runs its statement on that same server process, and the delayed
// cancel kills that innocent statement: it answers 503 "canceling statement due to user request".
// New connections are slow here (a proxy holds them 1.5 s: a loaded server forking backends,
// slow auth, a TLS handshake); without the delay the window is a few ms but still there.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOpenDb } from '../src/platform/environment-db.js';
import { createTestApp, PRODUCTION_KEY, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './helpers/stores.js';
import { freezableProxy, type FreezableProxy } from './helpers/tcp-proxy.js';

describe.runIf(onPostgres)('the COMMIT cancel and a reused connection', () => {
  let database: TestDatabase;
  let proxy: FreezableProxy;
  let t: TestApp;
  beforeAll(async () => {
    database = await createTestDatabase();
    const url = new URL(database.url!);
    proxy = await freezableProxy({ host: url.hostname, port: Number(url.port || 5432) });
    const env = {
      PRODUCTION_DATABASE_URL: proxy.through(database.url!),
      DATABASE_POOL_SIZE: '1',
      DATABASE_CONNECT_TIMEOUT_MS: '10000',
      DATABASE_STATEMENT_TIMEOUT_MS: '3000',
    };
    const config = testConfig(env);
    t = await createTestApp({ env, openDb: { production: (e) => defaultOpenDb(config, silentLog)(e) } });
  });
  afterAll(async () => {
    await t?.close();
    await proxy.close();
    await database.drop();
  });

  it("a request served after a slow commit is not cancelled by that commit's late pg_cancel_backend", async () => {
    const headers = { authorization: PRODUCTION_KEY };
    const first = await t.app.inject({ method: 'POST', url: '/reports/create', headers, payload: { report_id: 'RVC-1', reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' } });
    expect(first.statusCode).toBe(201);
    // Simulation: this table's commits take 3.2 s (just past the 3 s bound; PostgreSQL does not bound COMMIT).
    await database.db.exec(`
      create function review_slow_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(3.2); return null; end $$;
      create constraint trigger review_slow_commit after insert on reports deferrable initially deferred for each row execute function review_slow_commit();`);
    proxy.connectDelayMs = 1_500;
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      const slow = t.app.inject({ method: 'POST', url: '/reports/create', headers, payload: { report_id: 'RVC-2', reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' } });
      // The victim: a plain read, queued for the one pooled connection; once it has it, it waits
      // 2.3 s behind a lock taken as the slow commit ends (well inside its own 3 s statement timeout).
      await new Promise((resolve) => setTimeout(resolve, 300));
      await locker.query('begin');
      const locked = locker.query('lock table reports in access exclusive mode');
      const victim = t.app.inject({ method: 'GET', url: '/reports/RVC-1', headers });
      const slowRes = await slow;
      await locked;
      await new Promise((resolve) => setTimeout(resolve, 2_300 - 0));
      await locker.query('rollback');
      const res = await victim;
      // The slow commit itself: it finished (201) and is in the database.
      expect(slowRes.statusCode, slowRes.body).toBe(201);
      // Actual: 503 {"error":"Database unavailable: canceling statement due to user request"}.
      expect(res.statusCode, res.body).toBe(200);
    } finally {
      await locker.end();
    }
  }, 30_000);
});
