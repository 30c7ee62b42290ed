// The dashboard's side of the discipline queue (spec: Punishments and discipline): the pending list
// (GET /discipline/pending) and user lookups (POST /discipline/user-lookup). Completion:
// discipline-completion.test.ts; profiles and requeues: discipline-profile.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { emptyQueue, itemEvents, key, makeItem, type Row } from './helpers/discipline.js';
import { chatId, signedIn } from './helpers/identity.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

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

  it('any signed-in agent and the key may read it (spec: "either", no permission named), a lookup asked by another as a placeholder; no credential is 401', async () => {
    const junior = await signedIn(t, { clearance: 1 });
    const res = await list('', junior.headers);
    expect(res.statusCode).toBe(200);
    // The same list as the key's, but the lookup asked by someone else: its person withheld (issue 38).
    const whole = (await list('', key)).json();
    const lookup = whole.items.find((i: Row) => i.kind === 'user_lookup');
    expect(lookup).toMatchObject({ item_id: items.f!.item_id, user_id: items.f!.user_id });
    const shown = { ...lookup, user_id: null, result_note: null, last_error: null, ref: null, restricted: true };
    expect(res.json()).toEqual({ ...whole, items: whole.items.map((i: Row) => (i === lookup ? shown : i)) });
    expect((await list('', {})).statusCode).toBe(401);
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
