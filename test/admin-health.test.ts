// GET /admin/health (spec: System administration; Health history entry): who may call it, the ten
// sections and their measurements, how findings turn sections warn or error, and the incident
// history: one incident per change of the overall status, none while it holds.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminHealthRoutes } from '../src/admin/health.js';
import { QUEUE_FAILED_ERROR } from '../src/admin/health-checks.js';
import { loadMigrations } from '../src/platform/db/migrate.js';
import { PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { admin } from './helpers/admin.js';
import { clearQueues, createHealthTestApp, health, incidentRows, makeAction, makeDueDelivery, makeReport, SECTIONS } from './helpers/admin-health.js';
import { signedIn, type Person } from './helpers/identity.js';

const VERSION = JSON.parse(readFileSync('package.json', 'utf8')).version;
const LATEST_MIGRATION = loadMigrations().at(-1)!.version;
let t: TestApp;
let director: Person;
let report: string;

beforeAll(async () => {
  // The plugin again under /wired, given a service config without chat sign-in.
  t = await createHealthTestApp({
    extend: async (api) => {
      await api.register(adminHealthRoutes, { prefix: '/wired', config: { chatOAuth: undefined } });
    },
  });
  director = await admin(t);
  report = await makeReport(t.db.production);
});
afterAll(() => t.close());
beforeEach(async () => {
  const db = t.db.production;
  await clearQueues(db);
  await db.query('delete from health_incidents');
  await db.query(`update health_state set status = 'ok', previous_status = null, changed_at = now() - interval '1 hour'`);
});

describe('access (require_admin admin_health)', () => {
  it('refuses no credential, the bot key, a non-admin and an admin below clearance 4', async () => {
    const get = (headers: Record<string, string>) => t.app.inject({ url: '/admin/health', headers });
    expect((await get({})).statusCode).toBe(401);
    const bot = await get({ authorization: PRODUCTION_KEY });
    expect([bot.statusCode, bot.json().code]).toEqual([403, 'SESSION_REQUIRED']);
    const notAdmin = await get((await signedIn(t, { rank: 'Director', clearance: 5 })).headers);
    expect([notAdmin.statusCode, notAdmin.json().code]).toEqual([403, 'NOT_ADMIN']);
    const low = await get((await admin(t, { rank: 'Head Investigator', clearance: 3 })).headers);
    expect([low.statusCode, low.json().code]).toEqual([403, 'INSUFFICIENT_CLEARANCE']);
    const enough = await get((await admin(t, { rank: 'Head Investigator', clearance: 4 })).headers);
    expect(enough.statusCode).toBe(200);
    expect(await incidentRows(t)).toEqual([]);
  });
});

describe('the answer', () => {
  it('has all ten sections with their measurements, ok on a healthy database', async () => {
    const { res, body } = await health(t, director);
    expect(res.statusCode).toBe(200);
    expect(Object.keys(body)).toEqual(['success', 'checked_at', ...SECTIONS, 'incidents']);
    expect(body.overall).toEqual({ status: 'ok', sections: {} });
    for (const name of SECTIONS) expect(body[name], name).toMatchObject({ status: 'ok', ...(name === 'overall' ? {} : { reasons: [] }) });
    expect(Date.parse(body.checked_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(body.database).toMatchObject({
      store: t.db.production.kind,
      migrations_applied: LATEST_MIGRATION,
      migrations_expected: LATEST_MIGRATION,
      migrations_current: true,
      replicas: [],
    });
    expect(body.database.round_trip_ms).toBeGreaterThanOrEqual(0);
    expect(body.database.query_ms).toBeGreaterThan(0);
    expect(body.api).toMatchObject({ version: VERSION, node_version: process.version, pid: process.pid });
    expect(body.api.uptime_s).toBeGreaterThan(0);
    expect(body.api.rss_mb).toBeGreaterThan(0);
    const emptyQueue = { pending: 0, processing: 0, failed: 0, oldest_pending_age_s: null, oldest_processing_age_s: null, stale_after_s: 600 };
    expect(body.actions).toEqual({ status: 'ok', reasons: [], ...emptyQueue });
    expect(body.queue).toEqual({ status: 'ok', reasons: [], ...emptyQueue, oldest_overdue_expiry_s: null });
    expect(body.agents.directors_active).toBeGreaterThanOrEqual(1);
    expect(body.agents.active).toBeGreaterThanOrEqual(body.agents.admins_active);
    expect(body.agents.admins_not_active).toBe(0);
    expect(body.evidence).toEqual({ status: 'ok', reasons: [], newest_at: null, newest_age_s: null });
    expect(body.auth).toMatchObject({ api_key_configured: true, oauth_configured: true, realtime_configured: true });
    expect(body.auth.sessions_active).toBeGreaterThanOrEqual(1);
    expect(body.audit).toMatchObject({ newest_admin_event_at: null, admin_events_audited: true });
    expect(body.incidents).toEqual([]);
    expect(await incidentRows(t)).toEqual([]);
  });

  it('reports OAuth from the service config: error without sign-in', async () => {
    const { res, body } = await health(t, director, '/wired/admin/health');
    expect(res.statusCode).toBe(200);
    expect(body.auth).toMatchObject({ status: 'error', oauth_configured: false, reasons: [expect.stringContaining('sign-in is not configured')] });
    expect(body.overall).toEqual({ status: 'error', sections: { auth: 'error' } });
  });

  it('measures the newest evidence, event and audit row, and finds an admin event without its audit row', async () => {
    const db = t.db.production;
    await db.query(`insert into report_evidence (report_id, description, url) values ($1::text, 'Clip', 'https://clips.example.test/1')`, [report]);
    await db.query(`insert into events (type, actor_kind, correlation_id) values ('report.updated', 'system', 'health-event')`);
    const { body } = await health(t, director);
    expect(body.evidence.newest_age_s).toBeLessThan(60);
    expect(body.events.newest_age_s).toBeLessThan(60);
    expect(Date.parse(body.evidence.newest_at)).toBeLessThanOrEqual(Date.parse(body.checked_at));

    await db.query(`insert into events (type, actor_kind, correlation_id) values ('admin.queue_swept', 'system', 'health-unaudited')`);
    const broken = (await health(t, director)).body;
    expect(broken.audit).toMatchObject({ status: 'error', admin_events_audited: false });
    expect(broken.overall.sections).toEqual({ audit: 'error' });

    await db.transaction(async (tx) => {
      await tx.query(`insert into events (type, actor_kind, correlation_id) values ('admin.queue_swept', 'system', 'health-audited')`);
      await tx.query(`insert into audit_log (actor_kind, action, correlation_id) values ('system', 'admin.queue_swept', 'health-audited')`);
    });
    const mended = (await health(t, director)).body;
    expect(mended.audit).toMatchObject({ status: 'ok', admin_events_audited: true });
    expect(mended.audit.newest_admin_event_at).toBe(mended.audit.newest_at);
  });

  it('turns agents error when no active Director is on the allowlist', async () => {
    const db = t.db.production;
    const hi = await admin(t, { rank: 'Head Investigator', clearance: 4 });
    const directors = (await db.query<{ chat_id: string }>(`select l.chat_id from admin_allowlist l join agents a using (chat_id) where l.active and a.agent_rank = 'Director'`)).rows.map((r) => r.chat_id);
    await db.query(`update agents set status = 'suspended' where chat_id = any($1::text[])`, [directors]);
    try {
      const { body } = await health(t, hi);
      expect(body.agents).toMatchObject({ status: 'error', directors_active: 0, admins_not_active: directors.length });
      expect(body.agents.reasons).toEqual([expect.stringContaining('no active Director'), expect.stringMatching(new RegExp(`^${directors.length} active allowlist entr(y|ies) of agents who are not active$`))]);
    } finally {
      await db.query(`update agents set status = 'active' where chat_id = any($1::text[])`, [directors]);
    }
  });
});

describe('findings', () => {
  it('a failed action is a warning, many an error, and overall follows', async () => {
    const db = t.db.production;
    await makeAction(db, report, 'failed');
    const warn = (await health(t, director)).body;
    expect(warn.actions).toMatchObject({ status: 'warn', failed: 1, reasons: ['1 failed report action waiting for an admin (error at 25)'] });
    expect(warn.overall).toEqual({ status: 'warn', sections: { actions: 'warn' } });
    for (let i = 1; i < QUEUE_FAILED_ERROR; i++) await makeAction(db, report, 'failed');
    const error = (await health(t, director)).body;
    expect(error.actions).toMatchObject({ status: 'error', failed: QUEUE_FAILED_ERROR });
    expect(error.overall).toEqual({ status: 'error', sections: { actions: 'error' } });
  });

  it('a stale pending action or delivery, a forgotten claim and an overdue expiry turn their section', async () => {
    const db = t.db.production;
    await makeAction(db, report, 'pending', 6 * 60);
    const warn = (await health(t, director)).body;
    expect(warn.actions).toMatchObject({ status: 'warn', pending: 1 });
    expect(warn.actions.oldest_pending_age_s).toBeGreaterThanOrEqual(360);
    await makeAction(db, report, 'pending', 31 * 60);
    expect((await health(t, director)).body.actions).toMatchObject({ status: 'error', pending: 2 });

    await clearQueues(db);
    await makeAction(db, report, 'processing', 11 * 60);
    const stale = (await health(t, director)).body.actions;
    expect(stale).toMatchObject({ status: 'warn', processing: 1, reasons: [expect.stringContaining('past the stale timeout')] });

    await clearQueues(db);
    await makeDueDelivery(db, 31 * 60);
    const queue = (await health(t, director)).body;
    expect(queue.queue).toMatchObject({ status: 'error', pending: 1 });
    expect(queue.actions.status).toBe('ok');
    expect(queue.overall).toEqual({ status: 'error', sections: { queue: 'error' } });

    await clearQueues(db);
    await db.query(
      `insert into punishments (punishment_id, user_id, reason, expires_at) values ('HZ1HZ1', '800000000000000001', 'Health', now() - interval '6 minutes')`,
    );
    try {
      const overdue = (await health(t, director)).body.queue;
      expect(overdue).toMatchObject({ status: 'warn', reasons: [expect.stringContaining('past its expiry')] });
      expect(overdue.oldest_overdue_expiry_s).toBeGreaterThanOrEqual(360);
    } finally {
      await db.query(`delete from punishments where punishment_id = 'HZ1HZ1'`);
    }
  });
});

describe('incident history', () => {
  it('records one incident per change of the overall status, newest first, none while it holds', async () => {
    const db = t.db.production;
    expect((await health(t, director)).body.incidents).toEqual([]);

    await makeAction(db, report, 'failed');
    const first = await health(t, director);
    expect(first.body.overall.status).toBe('warn');
    const rows = await incidentRows(t);
    expect(rows).toEqual([
      expect.objectContaining({ status_before: 'ok', status_after: 'warn', sections: { actions: 'warn' }, correlation_id: first.requestId }),
    ]);
    expect(first.body.incidents).toEqual([
      { id: rows[0]!.id, status_before: 'ok', status_after: 'warn', sections: { actions: 'warn' }, correlation_id: first.requestId, created_at: first.body.checked_at },
    ]);

    for (let i = 0; i < 3; i++) expect((await health(t, director)).body.incidents).toHaveLength(1);
    expect(await incidentRows(t)).toHaveLength(1);

    await clearQueues(db);
    const back = await health(t, director);
    expect(back.body.overall).toEqual({ status: 'ok', sections: {} });
    expect(back.body.incidents.map((i: { status_before: string; status_after: string }) => `${i.status_before}>${i.status_after}`)).toEqual(['warn>ok', 'ok>warn']);
    expect(back.body.incidents[0].correlation_id).toBe(back.requestId);
    expect(await incidentRows(t)).toHaveLength(2);
    expect((await db.query('select status, previous_status from health_state')).rows).toEqual([{ status: 'ok', previous_status: 'warn' }]);
  });

  it('lists at most 50 incidents', async () => {
    await t.db.production.query(
      `insert into health_incidents (status_before, status_after, correlation_id, created_at)
       select case when g % 2 = 0 then 'ok' else 'warn' end, case when g % 2 = 0 then 'warn' else 'ok' end, 'old-' || g, now() - make_interval(mins => g)
       from generate_series(1, 60) g`,
    );
    const { body } = await health(t, director);
    expect(body.incidents).toHaveLength(50);
    expect(body.incidents[0].correlation_id).toBe('old-1');
    expect(body.incidents[49].correlation_id).toBe('old-50');
  });
});
