// The discipline queue as the bot and the dashboard see it (spec: Punishments and discipline;
// States and transitions, Discipline delivery item): pickup with its expiry and stale sweeps, the
// pending list and user lookups. Completion: discipline-completion.test.ts; profiles and requeues: discipline-profile.test.ts.
// The queue is global, so the pickup and list tests empty it first (tests of a file run in order).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STALE_FAILED_NOTE, STALE_REQUEUED_NOTE } from '../src/queue/sweep.js';
import { createTestApp, queueNotificationsDelivered, type TestApp } from './helpers/app.js';
import { itemEvents, itemRow, key, makeItem, makePunishment, makeReport, secondsFromNow, type Row } from './helpers/discipline.js';
import { chatId, signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const emptyQueue = (app: TestApp) => app.db.production.query('delete from discipline_deliveries');
/** A pickup, once the app has heard of the rows this file wrote behind its back. */
const next = async (app: TestApp, headers: Record<string, string> = key) => {
  await queueNotificationsDelivered(app);
  return app.app.inject({ method: 'GET', url: '/discipline/next', headers });
};

describe('GET /discipline/next', () => {
  it('204 with an empty body when nothing is due', async () => {
    await emptyQueue(t);
    await makeItem(t, { status: 'processing', attempts: 1, claimedAgo: 5 });
    await makeItem(t, { status: 'failed', attempts: 3 });
    const res = await next(t);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
  });

  it('claims the oldest due item first: processing, attempts 1, claimed now', async () => {
    await emptyQueue(t);
    const newer = await makeItem(t, { availableIn: -10 });
    const older = await makeItem(t, { availableIn: -60 });
    const res = await next(t);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, item: { item_id: older.item_id, kind: 'issue', status: 'processing', attempts: 1, surface: 'chat', user_id: older.user_id } });
    expect(secondsFromNow(body.item.claimed_at)).toBeGreaterThan(-10);
    const row = await itemRow(t, older.item_id);
    expect(row).toMatchObject({ status: 'processing', attempts: 1 });
    expect(row.claimed_at).toBe(body.item.claimed_at);
    expect((await itemRow(t, newer.item_id)).status).toBe('pending');

    const second = await next(t);
    expect(second.json().item).toMatchObject({ item_id: newer.item_id, status: 'processing', attempts: 1 });
    expect((await next(t)).statusCode).toBe(204);
  });

  it('embeds the live punishment row, read at pickup; null for a user_lookup', async () => {
    await emptyQueue(t);
    const report = await makeReport(t);
    const punishment = await makePunishment(t, { reportId: report });
    const item = await makeItem(t, { punishment, availableIn: -5 });
    await t.db.production.query(`update punishments set reason = 'Changed after enqueue', status = 'Appealed' where punishment_id = $1::text`, [punishment.punishment_id]);
    const lookup = await makeItem(t, { kind: 'user_lookup' });

    const res = await next(t);
    expect(res.statusCode).toBe(200);
    const claimed = res.json().item;
    expect(claimed.item_id).toBe(item.item_id);
    expect(claimed.punishment).toMatchObject({
      punishment_id: punishment.punishment_id,
      user_id: punishment.user_id,
      reason: 'Changed after enqueue',
      status: 'Appealed',
      report_id: report,
      expires_at: null,
      created_at: punishment.created_at,
    });

    const res2 = await next(t);
    expect(res2.json().item).toMatchObject({ item_id: lookup.item_id, kind: 'user_lookup', punishment_id: null, punishment: null });
  });

  it('does not hand out a paced item before its available_at', async () => {
    await emptyQueue(t);
    const paced = await makeItem(t, { availableIn: 3600, attempts: 1 });
    expect((await next(t)).statusCode).toBe(204);
    expect(await itemRow(t, paced.item_id)).toMatchObject({ status: 'pending', attempts: 1, claimed_at: null });
    await t.db.production.query(`update discipline_deliveries set available_at = now() - interval '1 second' where item_id = $1::bigint`, [paced.item_id]);
    const res = await next(t);
    expect(res.json().item).toMatchObject({ item_id: paced.item_id, status: 'processing', attempts: 2 });
  });

  it('expires lapsed punishments first and hands out their expire delivery', async () => {
    await emptyQueue(t);
    const report = await makeReport(t);
    const lapsed = await makePunishment(t, { reportId: report, expiresIn: -30 });
    const res = await next(t);
    expect(res.statusCode).toBe(200);
    const item = res.json().item;
    expect(item).toMatchObject({ kind: 'expire', punishment_id: lapsed.punishment_id, user_id: lapsed.user_id, status: 'processing', attempts: 1 });
    expect(item.punishment).toMatchObject({ punishment_id: lapsed.punishment_id, status: 'Expired' });
    expect(item.punishment.expired_at).not.toBeNull();
    const row = (await t.db.production.query('select status from punishments where punishment_id = $1::text', [lapsed.punishment_id])).rows[0];
    expect(row).toEqual({ status: 'Expired' });
    const expired = await t.db.production.query(`select type, actor_kind, report_id, correlation_id from events where type = 'punishment.expired' and report_id = $1::text`, [report]);
    expect(expired.rows).toEqual([{ type: 'punishment.expired', actor_kind: 'system', report_id: report, correlation_id: res.headers['x-request-id'] }]);
  });

  it('is for the API key only', async () => {
    const agent = await signedIn(t, { clearance: 5, rank: 'Director' });
    const res = await next(t, agent.headers);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ success: false, code: 'KEY_REQUIRED' });
  });
});

describe('GET /discipline/next: the stale sweep runs first', () => {
  let s: TestApp;
  beforeAll(async () => {
    s = await createTestApp({ env: { QUEUE_STALE_TIMEOUT_SECONDS: '60' } });
  });
  afterAll(() => s.close());

  it('requeues a stale claim under the cap and fails one at the cap, with system events', async () => {
    const report = await makeReport(s);
    const stale = await makeItem(s, { status: 'processing', attempts: 1, claimedAgo: 120, availableIn: -300 });
    const capped = await makeItem(s, { punishment: await makePunishment(s, { reportId: report }), status: 'processing', attempts: 3, claimedAgo: 120, availableIn: -200 });
    const fresh = await makeItem(s, { status: 'processing', attempts: 1, claimedAgo: 10, availableIn: -100 });

    const res = await next(s);
    expect(res.statusCode).toBe(200);
    const correlation = res.headers['x-request-id'];
    // Requeued by the sweep, then claimed again by this very pickup.
    expect(res.json().item).toMatchObject({ item_id: stale.item_id, status: 'processing', attempts: 2, last_error: STALE_REQUEUED_NOTE });
    expect(await itemEvents(s, stale.item_id)).toEqual([
      {
        type: 'delivery.requeued',
        actor_kind: 'system',
        actor_chat_id: null,
        report_id: null,
        before: { status: 'processing' },
        after: { status: 'pending', attempts: 1 },
        data: { item_id: stale.item_id, kind: 'issue', swept: true, last_error: STALE_REQUEUED_NOTE },
        correlation_id: correlation,
      },
    ]);

    expect(await itemRow(s, capped.item_id)).toMatchObject({ status: 'failed', attempts: 3, last_error: STALE_FAILED_NOTE, claimed_at: null });
    expect((await itemRow(s, capped.item_id)).completed_at).not.toBeNull();
    expect(await itemEvents(s, capped.item_id)).toEqual([
      expect.objectContaining({ type: 'delivery.failed', actor_kind: 'system', report_id: report, before: { status: 'processing' }, after: { status: 'failed', attempts: 3 }, correlation_id: correlation }),
    ]);

    expect(await itemRow(s, fresh.item_id)).toMatchObject({ status: 'processing', attempts: 1 });
    expect(await itemEvents(s, fresh.item_id)).toEqual([]);
    expect((await next(s)).statusCode).toBe(204);
  });
});

describe('GET /discipline/pending', () => {
  let items: Record<string, Row>;
  beforeAll(async () => {
    await emptyQueue(t);
    items = {};
    // created_at follows availableIn (in the past), so the list order is a, b, c, ...
    items.a = await makeItem(t, { status: 'pending', availableIn: -600 });
    items.b = await makeItem(t, { status: 'processing', attempts: 1, claimedAgo: 5, availableIn: -500 });
    items.c = await makeItem(t, { status: 'success', attempts: 1, availableIn: -400 });
    items.d = await makeItem(t, { status: 'failed', attempts: 3, availableIn: -300 });
    items.e = await makeItem(t, { status: 'cancelled', availableIn: -200 });
    items.f = await makeItem(t, { kind: 'user_lookup', status: 'pending', availableIn: -100 });
  });

  const list = (query: string, headers: Record<string, string> = key) => t.app.inject({ method: 'GET', url: `/discipline/pending${query}`, headers });
  const ids = (body: Row) => body.items.map((i: Row) => i.item_id);

  it('defaults to pending and processing, oldest first, with surface and punishment', async () => {
    const res = await list('');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, count: 3 });
    expect(ids(body)).toEqual([items.a!.item_id, items.b!.item_id, items.f!.item_id]);
    expect(body.items[0]).toMatchObject({ surface: 'chat', status: 'pending', kind: 'issue', punishment: { punishment_id: items.a!.punishment_id, reason: 'Spawn killing', status: 'Active' } });
    expect(body.items[2]).toMatchObject({ kind: 'user_lookup', punishment: null });
    expect(Object.keys(body.items[0]).sort()).toEqual(
      [...Object.keys(items.a!), 'punishment'].sort(),
    );
  });

  it('filters by a status list and pages with limit and offset; count is the total', async () => {
    const res = await list('?status=failed,success,cancelled');
    expect(res.json()).toMatchObject({ count: 3 });
    expect(ids(res.json())).toEqual([items.c!.item_id, items.d!.item_id, items.e!.item_id]);
    const page = await list('?status=pending,processing,success,failed,cancelled&limit=2&offset=2');
    expect(page.json().count).toBe(6);
    expect(ids(page.json())).toEqual([items.c!.item_id, items.d!.item_id]);
  });

  it('400 for an unknown status or a bound out of range', async () => {
    const res = await list('?status=pending,bogus');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      success: false,
      code: 'VALIDATION_ERROR',
      error: 'querystring.status: "bogus" is not a delivery status (one of: pending, processing, success, failed, cancelled)',
    });
    for (const [query, error] of [
      ['?limit=0', 'querystring.limit must be >= 1'],
      ['?limit=501', 'querystring.limit must be <= 500'],
      ['?offset=-1', 'querystring.offset must be >= 0'],
      ['?page=2', 'querystring.page is not an accepted field'],
    ] as const) {
      const bad = await list(query);
      expect(bad.statusCode, query).toBe(400);
      expect(bad.json().error).toBe(error);
    }
  });

  it('a session needs view_punishments (clearance 2)', async () => {
    const viewer = await signedIn(t, { clearance: 2 });
    expect((await list('', viewer.headers)).statusCode).toBe(200);
    const junior = await signedIn(t, { clearance: 1 });
    const res = await list('', junior.headers);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'INSUFFICIENT_CLEARANCE' });
  });
});

describe('POST /discipline/user-lookup', () => {
  const lookup = (headers: Record<string, string>, payload: unknown) => t.app.inject({ method: 'POST', url: '/discipline/user-lookup', headers, payload: payload as object });
  const lookupsOf = async (userId: string) =>
    (await t.db.production.query(`select * from discipline_deliveries where kind = 'user_lookup' and user_id = $1::text order by item_id`, [userId])).rows as Row[];
  const auditOf = async (userId: string) =>
    (await t.db.production.query(`select actor_kind, actor_chat_id, action, target, after, correlation_id from audit_log where target = $1::text order by id`, [userId])).rows as Row[];

  it('201: a pending user_lookup, audited, no event', async () => {
    const manager = await signedIn(t, { clearance: 4, rank: 'Head Investigator' });
    const userId = chatId();
    const res = await lookup(manager.headers, { user_id: userId });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      success: true,
      lookup: { kind: 'user_lookup', user_id: userId, punishment_id: null, surface: 'chat', status: 'pending', attempts: 0, requested_by: manager.agent.chat_id, punishment: null },
    });
    const rows = await lookupsOf(userId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ item_id: body.lookup.item_id, status: 'pending', requested_by: manager.agent.chat_id });
    expect(await auditOf(userId)).toEqual([
      {
        actor_kind: 'agent',
        actor_chat_id: manager.agent.chat_id,
        action: 'discipline.user_lookup_requested',
        target: userId,
        after: { item_id: body.lookup.item_id, kind: 'user_lookup', status: 'pending' },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
    expect(await itemEvents(t, body.lookup.item_id)).toEqual([]);
    const events = await t.db.production.query('select count(*)::int as n from events where correlation_id = $1::text', [res.headers['x-request-id']]);
    expect(events.rows[0]).toEqual({ n: 0 });
  });

  it('409 LOOKUP_PENDING while one is pending or processing; allowed again once it is done', async () => {
    const manager = await signedIn(t, { clearance: 4 });
    const userId = chatId();
    const first = (await lookup(manager.headers, { user_id: userId })).json().lookup;
    for (const status of ['pending', 'processing']) {
      await t.db.production.query('update discipline_deliveries set status = $2::text where item_id = $1::bigint', [first.item_id, status]);
      const res = await lookup(manager.headers, { user_id: userId });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, code: 'LOOKUP_PENDING', error: `A user lookup is already pending for ${userId}` });
    }
    expect(await lookupsOf(userId)).toHaveLength(1);
    expect(await auditOf(userId)).toHaveLength(1);

    await t.db.production.query(`update discipline_deliveries set status = 'success' where item_id = $1::bigint`, [first.item_id]);
    const again = await lookup(manager.headers, { user_id: userId });
    expect(again.statusCode).toBe(201);
    expect((await lookupsOf(userId)).map((r) => r.status)).toEqual(['success', 'pending']);
  });

  it('refuses the key, a junior session and a bad body, writing nothing', async () => {
    const userId = chatId();
    const byKey = await lookup(key, { user_id: userId });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json()).toMatchObject({ code: 'SESSION_REQUIRED' });
    const viewer = await signedIn(t, { clearance: 3 });
    const junior = await lookup(viewer.headers, { user_id: userId });
    expect(junior.statusCode).toBe(403);
    expect(junior.json()).toMatchObject({ code: 'INSUFFICIENT_CLEARANCE' });

    const manager = await signedIn(t, { clearance: 4 });
    for (const [payload, error] of [
      [{ user_id: 'not-a-snowflake' }, 'body.user_id must match pattern "^[0-9]{1,20}$"'],
      [{ user_id: '123456789012345678901' }, 'body.user_id must match pattern "^[0-9]{1,20}$"'],
      [{ user_id: 12345 }, 'body.user_id must be string'],
      [{}, 'body.user_id is required'],
      [{ user_id: userId, reason: 'x' }, 'body.reason is not an accepted field'],
    ] as const) {
      const res = await lookup(manager.headers, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json()).toEqual({ success: false, code: 'VALIDATION_ERROR', error });
    }
    expect(await lookupsOf(userId)).toEqual([]);
    expect(await auditOf(userId)).toEqual([]);
  });
});

describe.runIf(onPostgres)('concurrent pickups (PostgreSQL only)', () => {
  it('20 pickups of 10 due items: 10 distinct items and 10 empty answers', async () => {
    await emptyQueue(t);
    const seeded = [];
    for (let i = 0; i < 10; i++) seeded.push(await makeItem(t, { availableIn: -100 + i }));
    const answers = await Promise.all(Array.from({ length: 20 }, () => next(t)));
    const claimed = answers.filter((r) => r.statusCode === 200).map((r) => r.json().item.item_id as number);
    expect(answers.filter((r) => r.statusCode === 204)).toHaveLength(10);
    expect(new Set(claimed).size).toBe(10);
    expect([...claimed].sort((a, b) => a - b)).toEqual(seeded.map((s) => s.item_id).sort((a, b) => a - b));
    const rows = await t.db.production.query(`select status, attempts, count(*)::int as n from discipline_deliveries group by status, attempts`);
    expect(rows.rows).toEqual([{ status: 'processing', attempts: 1, n: 10 }]);
  });
});
