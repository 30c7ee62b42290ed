// Schema inspection and reload (spec: System administration, admin_schema): the migrations checked
// against their files, the catalog inventory, and the reload every instance acts on, with its
// trail, its refusals and, on PostgreSQL, prepared statements that a schema change made stale.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadMigrations } from '../src/platform/db/migrate.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { SCHEMA_RELOAD_CHANNEL } from '../src/platform/environments.js';
import { admin, expectAdminTrail, trailCounts } from './helpers/admin.js';
import { authNotificationsDelivered, createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { refuseInserts } from './helpers/failures.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
const report = () => ({ report_id: `SCHEMA-${process.pid}-${chatId()}`, reporter: chatId(), reported: chatId(), reason: 'Schema reload check', notes: 'n', evidence: 'e' });

const inspect = (t: TestApp, who: Person) => t.app.inject({ url: '/admin/schema', headers: who.headers });
const reload = (t: TestApp, who: Person, payload: object = { reason: 'columns added by hand' }) =>
  t.app.inject({ method: 'POST', url: '/admin/schema/reload', headers: who.headers, payload });
const createReport = (t: TestApp) => t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: report() });

/** Fills the caches a reload must drop: a resolved session and an idle bot queue. */
async function fillCaches(t: TestApp) {
  const env = t.environments.get('production')!;
  await authNotificationsDelivered(t); // and every other notification sent before: none may clear what follows
  const someone = await signedIn(t);
  expect((await t.app.inject({ url: '/auth/me', headers: someone.headers })).statusCode).toBe(200);
  // After the sign-in's commit, which clears this instance's idle queues.
  expect((await t.app.inject({ url: '/actions/next/supervisor', headers: key })).statusCode).toBe(204);
  expect(env.sessions.size).toBeGreaterThan(0);
  expect(env.idleQueues.size).toBeGreaterThan(0);
  return env;
}

/**
 * Payloads heard on the reload channel until `stop`, which first waits for a sentinel sent after
 * everything before it (the sentinel is a reload too: check the caches before stopping).
 */
async function hearReloads(t: TestApp) {
  const heard: string[] = [];
  const unlisten = await t.db.production.listen(SCHEMA_RELOAD_CHANNEL, { onNotify: (payload) => heard.push(payload) });
  return {
    heard,
    async stop() {
      const sentinel = `sentinel-${chatId()}`;
      await t.db.production.query('select pg_notify($1::text, $2::text)', [SCHEMA_RELOAD_CHANNEL, sentinel]);
      await vi.waitFor(() => expect(heard).toContain(sentinel), { timeout: 5000, interval: 20 });
      await unlisten();
      return heard.filter((payload) => payload !== sentinel);
    },
  };
}

describe('admin schema', () => {
  let t: TestApp;
  let director: Person;
  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
  });
  afterAll(() => t.close());

  describe('GET /admin/schema', () => {
    it('answers every migration file as applied and unchanged, none pending', async () => {
      const res = await inspect(t, director);
      expect(res.statusCode).toBe(200);
      expect(res.json().success).toBe(true);
      expect(res.json().pending).toEqual([]);
      expect(res.json().migrations).toEqual(
        loadMigrations().map((file) => ({
          version: file.version,
          name: file.name,
          applied_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          checksum: file.checksum,
          file_checksum: file.checksum,
          changed: false,
        })),
      );
    });

    it('flags a migration whose file no longer matches the checksum recorded when it was applied', async () => {
      const files = loadMigrations();
      await t.db.production.query(`update schema_migrations set checksum = 'recorded-before-an-edit' where version = 3`);
      try {
        const migrations = (await inspect(t, director)).json().migrations as Array<{ version: number; changed: boolean }>;
        expect(migrations[2]).toMatchObject({ version: 3, checksum: 'recorded-before-an-edit', file_checksum: files[2]!.checksum, changed: true });
        expect(migrations.filter((m) => m.changed).map((m) => m.version)).toEqual([3]);
      } finally {
        await t.db.production.query('update schema_migrations set checksum = $1::text where version = 3', [files[2]!.checksum]);
      }
    });

    it("lists the triggers with their tables and the functions with their arguments, none of an extension's", async () => {
      const { functions, triggers } = (await inspect(t, director)).json() as { functions: Array<Record<string, unknown>>; triggers: Array<Record<string, unknown>> };
      expect(triggers).toContainEqual({
        name: 'agents_auth_changed',
        table: 'agents',
        function: 'notify_auth_changed',
        timing: 'after',
        events: ['delete', 'update'],
        level: 'row',
        enabled: true,
        definition: 'CREATE TRIGGER agents_auth_changed AFTER DELETE OR UPDATE ON public.agents FOR EACH ROW EXECUTE FUNCTION notify_auth_changed()',
      });
      expect(triggers).toContainEqual(
        expect.objectContaining({ name: 'reports_counted_update', table: 'reports', function: 'count_reports', events: ['update'], level: 'statement' }),
      );
      expect(triggers.map((tr) => `${tr.table}.${tr.name}`)).toEqual(triggers.map((tr) => `${tr.table}.${tr.name}`).sort());
      expect(functions).toContainEqual({ name: 'count_reports', arguments: '', kind: 'function', returns: 'trigger', language: 'plpgsql' });
      expect(functions.map((f) => f.name)).not.toContain('notify_table_changed');
      expect(functions).toContainEqual({ name: 'iso_utc', arguments: 't timestamp with time zone', kind: 'function', returns: 'text', language: 'sql' });
      expect(functions).toContainEqual({ name: 'notify_auth_changed', arguments: '', kind: 'function', returns: 'trigger', language: 'plpgsql' });
      // Every trigger's function is in the inventory; pg_trgm's (in the same schema) are not.
      for (const trigger of triggers) expect(functions.map((f) => f.name)).toContain(trigger.function);
      expect(functions.map((f) => f.name)).not.toContain('similarity');
      const [{ n }] = (await t.db.production.query<{ n: number }>(`select count(*)::int as n from pg_proc where proname = 'similarity'`)).rows as [{ n: number }];
      expect(n).toBeGreaterThan(0);
    });
  });

  it('are for Directors: a clearance-5 allowlisted Head Investigator gets 403, and the reload writes nothing', async () => {
    const head = await admin(t, { rank: 'Head Investigator' });
    const before = await trailCounts(t);
    for (const res of [await inspect(t, head), await reload(t, head)]) {
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ success: false, error: 'Director access required', code: 'DIRECTOR_REQUIRED' });
    }
    expect(await trailCounts(t)).toEqual(before);
  });

  describe('POST /admin/schema/reload', () => {
    it('without a reason: 400, nothing written, nothing notified, nothing dropped', async () => {
      const env = await fillCaches(t);
      const listening = await hearReloads(t);
      const before = await trailCounts(t);
      for (const [payload, error] of [
        [{}, 'body.reason is required'],
        [{ reason: '  ' }, 'body.reason must not be blank'],
      ] as const) {
        const res = await reload(t, director, payload);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
      }
      expect(await trailCounts(t)).toEqual(before);
      expect(env.sessions.size).toBeGreaterThan(0);
      expect(await listening.stop()).toEqual([]);
    });

    it("writes one audit row and one admin.schema_reloaded event, notifies every instance and drops this instance's caches", async () => {
      const env = await fillCaches(t);
      const listening = await hearReloads(t);
      const before = await trailCounts(t);
      const res = await reload(t, director, { reason: 'index rebuilt by hand' });
      expect(res.statusCode).toBe(200);
      const correlationId = res.json().correlation_id as string;
      expect(res.json()).toEqual({ success: true, correlation_id: correlationId });
      expect(res.headers['x-request-id']).toBe(correlationId);
      const { audit, event } = await expectAdminTrail(t, correlationId, { action: 'admin.schema_reloaded', actor: director.agent.chat_id, target: 'production', reason: 'index rebuilt by hand' });
      expect(audit).toMatchObject({ before: null, after: null });
      expect(event.data).toEqual({ reason: 'index rebuilt by hand', target: 'production', details: { channel: 'cms_schema_reload' } });
      expect(await trailCounts(t)).toEqual({ ...before, audit: before.audit! + 1, events: before.events! + 1 });
      // Dropped by the committing instance at once, before its own notification comes back.
      expect(env.sessions.size).toBe(0);
      expect(env.idleQueues.size).toBe(0);
      expect(await listening.stop()).toEqual([correlationId]);
    });

    it('sends no notification when its transaction rolls back', async () => {
      await refuseInserts(t.db.production, 'refuse_reload_audit', `new.action = 'admin.schema_reloaded'`, ['audit_log']);
      try {
        const listening = await hearReloads(t);
        const before = await trailCounts(t);
        const res = await reload(t, director);
        expect(res.statusCode).toBe(500);
        expect(res.json()).toMatchObject({ success: false, error: expect.stringContaining('refused for the test'), code: 'DATABASE_ERROR' });
        expect(await trailCounts(t)).toEqual(before);
        expect(await listening.stop()).toEqual([]);
      } finally {
        await t.db.production.exec('drop function refuse_reload_audit() cascade');
      }
    });
  });
});

// Two instances on one database, each with a single pooled connection, so that the connection
// that prepared a statement is the one the next request gets.
describe.runIf(onPostgres)('a schema changed out of band (PostgreSQL only: PGlite prepares no named statements)', () => {
  let database: TestDatabase;
  let one: TestApp;
  let other: TestApp;
  const onOneConnection = async () => {
    const app = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: database.url!, max: 1 }) } });
    return { ...app, db: { ...app.db, production: database.db } };
  };
  beforeAll(async () => {
    database = await createTestDatabase();
    one = await onOneConnection();
    other = await onOneConnection();
  });
  afterAll(async () => {
    await Promise.all([one?.close(), other?.close()]);
    await database?.drop();
  });

  const staleFailure = { success: false, error: 'Database error: cached plan must not change result type', code: 'DATABASE_ERROR' };
  // POST /actions/<id>/requeue locks the action with a prepared `select *` (lock_action): a column
  // added by hand changes its result type under the plan the connection holds.
  const failedAction = async (t: TestApp) => {
    const report = (await createReport(t)).json().report.report_id as string;
    const { rows } = await database.db.query<{ action_id: number }>(
      `insert into report_actions (report_id, kind, queue, status, payload, attempts, last_error) values ($1::text, 'validate', 'operator', 'failed', '{}', 3, 'down') returning action_id`,
      [report],
    );
    return rows[0]!.action_id;
  };
  const requeue = async (t: TestApp, id: number) => t.app.inject({ method: 'POST', url: `/actions/${id}/requeue`, headers: key });
  const status = async (id: number) => (await database.db.query<{ status: string }>('select status from report_actions where action_id = $1::bigint', [id])).rows[0]!.status;

  it('breaks a prepared select * until the reload, after which the instance that reloads works again', async () => {
    expect((await requeue(one, await failedAction(one))).statusCode).toBe(200); // lock_action now prepared on its connection
    await database.db.exec('alter table report_actions add column probe text');
    const stuck = await failedAction(one);
    const broken = await requeue(one, stuck);
    expect(broken.statusCode).toBe(500);
    expect(broken.json()).toEqual(staleFailure);
    expect(await status(stuck)).toBe('failed');
    const director = await admin(one);
    const res = await reload(one, director);
    expect(res.statusCode).toBe(200);
    await expectAdminTrail(one, res.json().correlation_id, { action: 'admin.schema_reloaded', actor: director.agent.chat_id, target: 'production', reason: 'columns added by hand' });
    const fixed = await requeue(one, stuck);
    expect(fixed.statusCode).toBe(200);
    expect(await status(stuck)).toBe('pending');
  });

  it('another instance drops its prepared statements and caches when it hears the notification', async () => {
    expect((await requeue(other, await failedAction(other))).statusCode).toBe(200);
    await database.db.exec('alter table report_actions add column probe_again text');
    const stuck = await failedAction(other);
    expect((await requeue(other, stuck)).json()).toEqual(staleFailure);
    const env = await fillCaches(other);
    const res = await reload(one, await admin(one));
    expect(res.statusCode).toBe(200);
    await vi.waitFor(() => expect([env.sessions.size, env.idleQueues.size]).toEqual([0, 0]), { timeout: 5000, interval: 20 });
    expect((await requeue(other, stuck)).statusCode).toBe(200);
    expect(await status(stuck)).toBe('pending');
  });

  // Found by the second review of issue 41's change: with a key, the key's transaction took its
  // connection before the reload dropped the prepared statements, and the reload's own event insert
  // failed on it with the very error the reload exists to clear (keyLookedUpLate, admin/schema.ts).
  it('reloads with a fresh Idempotency-Key as it does without one', async () => {
    const [directorOne, directorOther] = [await admin(one), await admin(other)];
    // record_event (a named statement returning the event's columns) prepared on each instance's one connection.
    for (const t of [one, other]) expect((await createReport(t)).statusCode).toBe(201);
    // The change the operator made by hand, and reloads for: a column the event insert returns changes type.
    await database.db.exec('alter table events alter column client_id type varchar(64)');
    const keyed = await one.app.inject({ method: 'POST', url: '/admin/schema/reload', headers: { ...directorOne.headers, 'idempotency-key': randomUUID() }, payload: { reason: 'column type changed by hand' } });
    const unkeyed = await reload(other, directorOther, { reason: 'column type changed by hand' });
    expect({ keyed: { status: keyed.statusCode, body: keyed.json() }, unkeyed: unkeyed.statusCode }).toEqual({
      keyed: { status: 200, body: { success: true, correlation_id: expect.any(String) } },
      unkeyed: 200,
    });
  });
});
