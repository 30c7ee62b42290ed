// GET /admin/health when the database is slow, hung or shared: it answers within its bound with
// the database section in error and never a 500, and the history gets exactly one incident per
// change even when several instances compute health at the same moment (PostgreSQL only: real
// concurrent transactions on one database).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_DEADLINE_MS, HEALTH_STATEMENT_TIMEOUT_MS } from '../src/admin/health-checks.js';
import { recordHealth } from '../src/admin/health-queries.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import type { TestApp } from './helpers/app.js';
import { admin } from './helpers/admin.js';
import { clearQueues, createHealthTestApp, hangable, health, healthState, incidentRows, makeAction, makeReport } from './helpers/admin-health.js';
import type { Person } from './helpers/identity.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './helpers/stores.js';

const DB_SECTIONS = ['actions', 'queue', 'agents', 'evidence', 'auth', 'audit', 'events'] as const;
const transitions = (rows: Array<Record<string, unknown>>) => rows.map((r) => `${String(r.status_before)}>${String(r.status_after)}`);

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

describe('a database whose transactions hang (an exhausted pool, a hung driver)', () => {
  let t: TestApp;
  let database: TestDatabase;
  let db: ReturnType<typeof hangable>;
  let director: Person;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = hangable(database.db);
    const app = await createHealthTestApp({ openDb: { production: async () => db } });
    t = { ...app, db: { ...app.db, production: db } };
    director = await admin(t);
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  it(`answers within ${HEALTH_DEADLINE_MS} ms with the database in error, then recovers`, async () => {
    db.hanging = true;
    const { value: hung, ms } = await timed(() => health(t, director));
    db.hanging = false;
    expect(hung.res.statusCode).toBe(200);
    expect(ms).toBeGreaterThanOrEqual(HEALTH_DEADLINE_MS - 50);
    expect(ms).toBeLessThan(HEALTH_DEADLINE_MS + 1000);
    const body = hung.body;
    expect(body.database).toMatchObject({ status: 'error', round_trip_ms: null, query_ms: null, migrations_applied: null, migrations_current: null });
    expect(body.database.reasons).toEqual([
      `no answer within ${HEALTH_DEADLINE_MS} ms (the pool is exhausted or the database is hung)`,
      'incident history not available: no time left',
    ]);
    for (const name of DB_SECTIONS) {
      expect(body[name].status, name).toBe('error');
      expect(body[name].reasons, name).toContain(`not measured: ${body.database.reasons[0]}`);
    }
    expect(body.actions).toMatchObject({ pending: null, failed: null });
    expect(body.api.status).toBe('ok');
    expect(body.overall.status).toBe('error');
    expect(body.incidents).toEqual([]);

    const after = await health(t, director);
    expect(after.body.overall).toEqual({ status: 'ok', sections: {} });
    // Nothing could be recorded while hung, so nothing changed from the recorded ok.
    expect(await incidentRows(t)).toEqual([]);
  });

  it('puts one computation on a hung database however many admins poll at once', async () => {
    const before = db.transactions;
    db.hanging = true;
    const answers = await Promise.all(Array.from({ length: 10 }, () => health(t, director)));
    db.hanging = false;
    expect(db.transactions - before).toBe(1);
    for (const { res, body } of answers) {
      expect(res.statusCode).toBe(200);
      expect(body.checked_at).toBe(answers[0]!.body.checked_at);
      expect(body.database.status).toBe('error');
    }
  });
});

describe.runIf(onPostgres)('a table locked by another connection (PostgreSQL)', () => {
  let t: TestApp;
  let director: Person;
  beforeAll(async () => {
    t = await createHealthTestApp();
    director = await admin(t);
  });
  afterAll(() => t.close());

  it('is cancelled by the statement timeout, answers with the database in error and records the change', async () => {
    const locker = new pg.Client({ connectionString: t.urls.production });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table report_actions in access exclusive mode');
      const { value: locked, ms } = await timed(() => health(t, director));
      expect(locked.res.statusCode).toBe(200);
      expect(ms).toBeGreaterThanOrEqual(HEALTH_STATEMENT_TIMEOUT_MS - 50);
      expect(ms).toBeLessThan(HEALTH_DEADLINE_MS);
      expect(locked.body.database).toMatchObject({ status: 'error', reasons: ['database error: canceling statement due to statement timeout'] });
      expect(locked.body.overall.status).toBe('error');
      expect(locked.body.incidents).toEqual([expect.objectContaining({ status_before: 'ok', status_after: 'error', correlation_id: locked.requestId })]);
      expect(locked.body.incidents[0].sections).toMatchObject({ database: 'error', actions: 'error', events: 'error' });
    } finally {
      await locker.query('rollback');
      await locker.end();
    }
    const free = await health(t, director);
    expect(free.body.overall.status).toBe('ok');
    expect(transitions(await incidentRows(t))).toEqual(['ok>error', 'error>ok']);
  });
});

describe.runIf(onPostgres)('two instances on one database (PostgreSQL)', () => {
  const REQUESTS = 24;
  let one: TestApp;
  let two: TestApp;
  let db: Db;
  let director: Person;

  beforeAll(async () => {
    one = await createHealthTestApp();
    db = one.db.production;
    two = await createHealthTestApp({ openDb: { production: async () => openPostgres({ connectionString: one.urls.production!, max: 10 }) } });
    director = await admin(one);
  });
  afterAll(async () => {
    await two.close();
    await one.close();
  });

  /** REQUESTS requests on each instance at once. */
  async function stampede() {
    const all = await Promise.all([one, two].flatMap((t) => Array.from({ length: REQUESTS }, () => health(t, director))));
    for (const { res } of all) expect(res.statusCode).toBe(200);
    return all;
  }

  it('record exactly one incident per change however many compute it at once', async () => {
    for (const t of [one, two]) expect((await health(t, director)).body.overall.status).toBe('ok');
    const report = await makeReport(db);

    await makeAction(db, report, 'failed');
    const warn = await stampede();
    expect(new Set(warn.map((a) => a.body.overall.status))).toEqual(new Set(['warn']));
    const rows = await incidentRows(one);
    expect(transitions(rows)).toEqual(['ok>warn']);
    expect(warn.map((a) => a.requestId)).toContain(rows[0]!.correlation_id);
    // An answer lists the incident unless its statement began before the incident was committed.
    for (const { body } of warn) expect([undefined, rows[0]!.id]).toContain(body.incidents[0]?.id);
    expect(warn.filter(({ body }) => body.incidents[0]?.id === rows[0]!.id).length).toBeGreaterThan(0);

    await clearQueues(db);
    await stampede();
    expect(transitions(await incidentRows(one))).toEqual(['ok>warn', 'warn>ok']);
    expect(await healthState(db)).toEqual({ status: 'ok', previous_status: 'warn' });
  });

  it('records once from many connections at the same moment, and a stale reading never undoes a newer change', async () => {
    const pool = openPostgres({ connectionString: one.urls.production!, max: 20 });
    try {
      const before = (await incidentRows(one)).length;
      const change = (i: number, status: 'warn' | 'error', readAt: string | null = null) =>
        pool.transaction((tx) => recordHealth(tx, { status, sections: { actions: status }, readAt, correlationId: `race-${i}`, limit: 50 }));
      await Promise.all(Array.from({ length: 20 }, (_, i) => change(i, 'error')));
      const rows = await incidentRows(one);
      expect(transitions(rows.slice(before))).toEqual(['ok>error']);
      expect(rows.at(-1)!.correlation_id).toMatch(/^race-\d+$/);

      // Read a minute before the change just recorded: ignored.
      await change(99, 'warn', new Date(Date.now() - 60_000).toISOString());
      expect(await incidentRows(one)).toHaveLength(rows.length);
      expect(await healthState(db)).toMatchObject({ status: 'error' });
    } finally {
      await pool.close();
    }
  });
});
