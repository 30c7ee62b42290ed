// An answer with an Idempotency-Key that the service could not finish (its key not looked up, its
// commit failed) is rendered after the handler, outside the error handler: it is the answer the
// same failure gets without a key, and it is logged as the error handler logs it, so that an
// outage seen only by keyed requests is not silent. A refusal at COMMIT is one database error like
// any other on both stores.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { switchableDatabase } from './helpers/failures.js';
import { chatId } from './helpers/identity.js';
import { capturedLog } from './helpers/log-capture.js';
import { seedReportBody } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

const { logger, lines } = capturedLog();
let t: TestApp;
let database: Awaited<ReturnType<typeof switchableDatabase>>;

beforeAll(async () => {
  database = await switchableDatabase();
  t = await createTestApp({ openDb: { production: database.open }, logger });
});
afterAll(async () => {
  database?.setDown(false);
  await t?.close();
});

const poll = (key?: string) =>
  t.app.inject({ url: '/actions/next', headers: { authorization: PRODUCTION_KEY, ...(key === undefined ? {} : { 'idempotency-key': key }) } });

describe(`a keyed answer the service could not finish, on ${storeName}`, () => {
  it('an idle poll whose key cannot be looked up: 503, logged once as the outage, and its end', async () => {
    // A poll that finds nothing: this instance remembers the queue as idle, and answers the next
    // polls from memory; a keyed one has its key looked up on its own, after its handler.
    expect((await poll()).statusCode).toBe(204);
    database.setDown(true);
    lines.length = 0;
    for (const key of ['idle-1', 'idle-2']) {
      const res = await poll(key);
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 503,
        body: { success: false, error: 'Database unavailable: connect ECONNREFUSED 127.0.0.1:5432', code: 'DATABASE_UNAVAILABLE' },
      });
    }
    database.setDown(false);
    expect((await poll('idle-3')).statusCode).toBe(204);
    expect(lines.map((line) => ({ level: line.level, msg: line.msg, url: line.url }))).toEqual([
      { level: 40, msg: 'production database unreachable: answering 503 until it is back (Database unavailable: connect ECONNREFUSED 127.0.0.1:5432)', url: '/actions/next' },
      { level: 40, msg: 'production database reachable again', url: undefined },
    ]);
  });

  it.each([
    ['23514', 400, 'VALIDATION_ERROR', 'Invalid value: refused at commit for the test', { level: 30 }],
    ['08006', 503, 'DATABASE_UNAVAILABLE', 'Database unavailable: refused at commit for the test', { level: 40, msg: 'production database unreachable: answering 503 until it is back (Database unavailable: refused at commit for the test)' }],
    // A commit the synchronous standby did not acknowledge: the database answers, no outage.
    ['08007', 503, 'DATABASE_UNAVAILABLE', 'Database unavailable: refused at commit for the test', { level: 40, msg: 'Database unavailable: refused at commit for the test' }],
    ['XX001', 500, 'DATABASE_ERROR', 'Database error: refused at commit for the test', { level: 50, stack: true }],
  ] as const)('a refusal at COMMIT (SQLSTATE %s): %i with and without a key, nothing written, logged as such', async (code, status, codeName, error, logged) => {
    // A deferred constraint of the test's own, checked at COMMIT, for the reports of this case.
    const marker = `COMMIT-${code}-`;
    await t.db.production.exec(`
      create or replace function refuse_at_commit_${code}() returns trigger language plpgsql as $$
      begin
        if new.report_id like '${marker}%' then raise exception 'refused at commit for the test' using errcode = '${code}'; end if;
        return null;
      end $$;
      create constraint trigger refuse_at_commit_${code} after insert on reports deferrable initially deferred
        for each row execute function refuse_at_commit_${code}();`);
    for (const key of [undefined, `commit-${code}`]) {
      lines.length = 0;
      const body = seedReportBody(`${marker}${key ?? 'none'}`, chatId());
      const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { authorization: PRODUCTION_KEY, ...(key ? { 'idempotency-key': key } : {}) }, payload: body });
      expect({ key, status: res.statusCode, body: res.json() }).toEqual({ key, status, body: { success: false, error, code: codeName } });
      const { rows: written } = await t.db.production.query('select (select count(*)::int from reports where report_id = $1) as reports, (select count(*)::int from idempotency_keys where key = $2) as answers', [body.report_id, key ?? '']);
      expect(written).toEqual([{ reports: 0, answers: 0 }]);
      // The next success ends an outage (its line is the second).
      expect((await poll()).statusCode).toBe(204);
      const first = lines[0];
      if (logged.level === 30) expect(first).toBeUndefined(); // info: below this logger's level
      else {
        expect({ level: first?.level, url: first?.url, stack: JSON.stringify(first ?? {}).includes('"stack"') }).toEqual({ level: logged.level, url: '/reports/create', stack: 'stack' in logged });
        if ('msg' in logged) expect(lines.map((line) => line.msg)).toEqual([logged.msg, ...(code === '08006' ? ['production database reachable again'] : [])]);
      }
    }
  });
});

describe(`the sweep of expired answers, on ${storeName}`, () => {
  it('a sweep that fails is logged at warn even though request logging is off (LOG_LEVEL above info)', async () => {
    const { logger: sweepLogger, lines: said } = capturedLog();
    const other = await createTestApp({ logger: sweepLogger });
    try {
      // Every delete from the kept answers refused: the sweep after the first keyed request fails.
      await other.db.production.exec(`
        create function refuse_sweep() returns trigger language plpgsql as $$
        begin raise exception 'sweep refused for the test'; end $$;
        create trigger refuse_sweep before delete on idempotency_keys for each statement execute function refuse_sweep();`);
      const body = seedReportBody(`SWEEP-${process.pid}`, chatId());
      const res = await other.app.inject({ method: 'POST', url: '/reports/create', headers: { authorization: PRODUCTION_KEY, 'idempotency-key': 'sweep-1' }, payload: body });
      expect(res.statusCode).toBe(201);
      const { rows } = await other.db.production.query('select status from idempotency_keys where key = $1', ['sweep-1']);
      expect(rows).toEqual([{ status: 201 }]);
      for (const until = Date.now() + 5_000; said.length === 0 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(said.map((line) => ({ level: line.level, msg: line.msg, environment: line.environment }))).toEqual([
        { level: 40, msg: 'expired idempotency keys not swept', environment: 'production' },
      ]);
    } finally {
      await other.close();
    }
  });
});
