// The bot's reports on discipline deliveries and the requeue of failed ones (spec: States and
// transitions, Discipline delivery item; DESIGN.md on retry_after_seconds): each branch, the rows
// and events written, and that a refused or failed request writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refuseInserts } from './helpers/failures.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
type Row = Record<string, any>;

/** Events with this note, or about this user, fail to insert: a failure late in a transaction. */
const REFUSED_NOTE = 'REFUSE-THE-EVENT';
const REFUSED_USER = '999000000000000001';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  await refuseInserts(t.db.production, 'refuse_marked_events', `new.data->>'note' = '${REFUSED_NOTE}' or new.data->>'user_id' = '${REFUSED_USER}'`, ['events']);
});
afterAll(() => t.close());

let seq = 0;
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
function punishmentId(): string {
  const n = ++seq;
  return `${LETTERS[n % 26]}${LETTERS[Math.floor(n / 26) % 26]}${n % 10}DC${Math.floor(n / 10) % 10}`;
}

async function makeReport(): Promise<string> {
  const id = `DC-${process.pid}-${++seq}`;
  await t.db.production.query(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence) values ($1::text, '300000000000000001', '300000000000000002', 'Harassment', '', '')`,
    [id],
  );
  return id;
}

async function makePunishment(reportId: string | null = null): Promise<Row> {
  const { rows } = await t.db.production.query(
    `insert into punishments (punishment_id, user_id, reason, report_id) values ($1::text, $2::text, 'Spawn killing', $3::text) returning *`,
    [punishmentId(), chatId(), reportId],
  );
  return rows[0]!;
}

interface ItemSeed {
  kind?: 'issue' | 'revoke' | 'user_lookup';
  reportId?: string | null;
  userId?: string;
  status?: string;
  attempts?: number;
  lastError?: string | null;
}

/** An item written straight into the queue: by default an issue delivery the bot has claimed once. */
async function makeItem(seed: ItemSeed = {}): Promise<Row> {
  const kind = seed.kind ?? 'issue';
  const punishment = kind === 'user_lookup' ? null : await makePunishment(seed.reportId ?? null);
  const status = seed.status ?? 'processing';
  const { rows } = await t.db.production.query(
    `insert into discipline_deliveries (kind, punishment_id, user_id, status, attempts, last_error, claimed_at, completed_at, updated_at)
     values ($1::text, $2::text, $3::text, $4::text, $5::int, $6::text,
             case when $4::text = 'processing' then now() - interval '5 seconds' end,
             case when $4::text in ('success', 'failed', 'cancelled') then now() - interval '1 minute' end,
             now() - interval '1 hour')
     returning *`,
    [kind, punishment?.punishment_id ?? null, seed.userId ?? punishment?.user_id ?? chatId(), status, seed.attempts ?? 1, seed.lastError ?? null],
  );
  return rows[0]!;
}

const itemRow = async (id: number) => (await t.db.production.query('select * from discipline_deliveries where item_id = $1::bigint', [id])).rows[0] as Row;
const itemEvents = async (id: number) =>
  (
    await t.db.production.query(
      `select type, actor_kind, actor_chat_id, report_id, before, after, data, correlation_id from events where (data->>'item_id')::bigint = $1::bigint order by id`,
      [id],
    )
  ).rows as Row[];
const profileRow = async (id: string) => (await t.db.production.query('select * from chat_profiles where chat_id = $1::text', [id])).rows[0] as Row | undefined;
const post = (url: string, payload?: unknown, headers: Record<string, string> = key) =>
  t.app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
const complete = (id: number, payload: unknown, headers?: Record<string, string>) => post(`/discipline/${id}/complete`, payload, headers);
const secondsFromNow = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;

/** The item is as seeded and has no event: the request changed nothing. */
async function unchanged(item: Row) {
  expect(await itemRow(item.item_id)).toEqual(item);
  expect(await itemEvents(item.item_id)).toEqual([]);
}

describe('POST /discipline/<item_id>/complete', () => {
  it('success: terminal, note and ref kept, delivery.completed carrying the report', async () => {
    const report = await makeReport();
    const item = await makeItem({ reportId: report });
    const res = await complete(item.item_id, { result: 'success', note: 'Ban applied', ref: 'msg-42' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      success: true,
      item: { item_id: item.item_id, status: 'success', attempts: 1, result_note: 'Ban applied', ref: 'msg-42', last_error: null, punishment: { punishment_id: item.punishment_id, report_id: report } },
    });
    expect(secondsFromNow(body.item.completed_at)).toBeGreaterThan(-10);
    const row = await itemRow(item.item_id);
    expect(row).toMatchObject({ status: 'success', result_note: 'Ban applied', ref: 'msg-42', last_error: null, completed_at: body.item.completed_at });
    expect(await itemEvents(item.item_id)).toEqual([
      {
        type: 'delivery.completed',
        actor_kind: 'bot',
        actor_chat_id: null,
        report_id: report,
        before: { status: 'processing' },
        after: { status: 'success', attempts: 1, completed_at: row.completed_at },
        data: { item_id: item.item_id, kind: 'issue', punishment_id: item.punishment_id, note: 'Ban applied', ref: 'msg-42' },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
  });

  it('failed without a pause (absent, null or 0) is terminal: delivery.failed', async () => {
    for (const pause of [{}, { retry_after_seconds: null }, { retry_after_seconds: 0 }]) {
      const item = await makeItem();
      const res = await complete(item.item_id, { result: 'failed', note: 'User not in guild', ...pause });
      expect(res.statusCode).toBe(200);
      expect(res.json().item).toMatchObject({ status: 'failed', result_note: 'User not in guild', last_error: 'User not in guild', ref: null });
      const row = await itemRow(item.item_id);
      expect(row).toMatchObject({ status: 'failed', last_error: 'User not in guild', attempts: 1 });
      expect(row.completed_at).not.toBeNull();
      expect(await itemEvents(item.item_id)).toEqual([
        expect.objectContaining({
          type: 'delivery.failed',
          actor_kind: 'bot',
          report_id: null,
          before: { status: 'processing' },
          after: { status: 'failed', attempts: 1, completed_at: row.completed_at },
          data: { item_id: item.item_id, kind: 'issue', punishment_id: item.punishment_id, note: 'User not in guild', ref: null },
        }),
      ]);
    }
  });

  it('failed with retry_after_seconds under the cap: back to pending, paced, not handed out early', async () => {
    const report = await makeReport();
    const item = await makeItem({ reportId: report, attempts: 2 });
    const res = await complete(item.item_id, { result: 'failed', note: 'Rate limited', retry_after_seconds: 90.5 });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.item).toMatchObject({ status: 'pending', attempts: 2, claimed_at: null, completed_at: null, last_error: 'Rate limited', result_note: null });
    const wait = secondsFromNow(body.item.available_at);
    expect(wait).toBeGreaterThan(80);
    expect(wait).toBeLessThanOrEqual(90.5);
    const row = await itemRow(item.item_id);
    expect(row).toMatchObject({ status: 'pending', available_at: body.item.available_at, claimed_at: null, last_error: 'Rate limited' });
    expect(await itemEvents(item.item_id)).toEqual([
      {
        type: 'delivery.requeued',
        actor_kind: 'bot',
        actor_chat_id: null,
        report_id: report,
        before: { status: 'processing' },
        after: { status: 'pending', attempts: 2, available_at: row.available_at },
        data: {
          item_id: item.item_id,
          kind: 'issue',
          punishment_id: item.punishment_id,
          note: 'Rate limited',
          ref: null,
          retry_after_seconds: 90.5,
          available_at: row.available_at,
          transient: true,
        },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
    // Alone in the queue, it is still not handed out before its time.
    await t.db.production.query(`update discipline_deliveries set status = 'cancelled' where status = 'pending' and item_id <> $1::bigint`, [item.item_id]);
    const pickup = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(pickup.statusCode).toBe(204);
    expect((await itemRow(item.item_id)).status).toBe('pending');
  });

  it('failed with retry_after_seconds at the retry cap: terminal, retry_cap_reached', async () => {
    const item = await makeItem({ attempts: 3 });
    const res = await complete(item.item_id, { result: 'failed', note: 'Rate limited', retry_after_seconds: 30 });
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ status: 'failed', attempts: 3, last_error: 'Rate limited' });
    expect((await itemRow(item.item_id)).completed_at).not.toBeNull();
    const events = await itemEvents(item.item_id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'delivery.failed', after: { status: 'failed', attempts: 3 } });
    expect(events[0]!.data).toEqual({
      item_id: item.item_id,
      kind: 'issue',
      punishment_id: item.punishment_id,
      note: 'Rate limited',
      ref: null,
      retry_after_seconds: 30,
      retry_cap_reached: true,
    });
  });

  it('accepts a late completion of an item the sweep put back to pending', async () => {
    const item = await makeItem({ status: 'pending', attempts: 1 });
    const res = await complete(item.item_id, { result: 'success' });
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ status: 'success', result_note: null, ref: null });
    expect(await itemEvents(item.item_id)).toEqual([expect.objectContaining({ type: 'delivery.completed', before: { status: 'pending' } })]);
  });

  it('completes a user_lookup too, with no punishment and no report', async () => {
    const item = await makeItem({ kind: 'user_lookup' });
    const res = await complete(item.item_id, { result: 'failed', note: 'Unknown user' });
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ kind: 'user_lookup', status: 'failed', punishment: null });
    expect(await itemEvents(item.item_id)).toEqual([expect.objectContaining({ type: 'delivery.failed', report_id: null, data: expect.objectContaining({ kind: 'user_lookup', punishment_id: null }) })]);
  });

  it('404 for an unknown item', async () => {
    const res = await complete(987654321, { result: 'success' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_NOT_FOUND', error: 'Discipline item 987654321 not found' });
  });

  it('409 DISCIPLINE_ALREADY_COMPLETED on a terminal item, nothing written', async () => {
    const item = await makeItem();
    expect((await complete(item.item_id, { result: 'success', ref: 'first' })).statusCode).toBe(200);
    const after = await itemRow(item.item_id);
    const res = await complete(item.item_id, { result: 'failed', note: 'second', retry_after_seconds: 5 });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_ALREADY_COMPLETED', error: `Discipline item ${item.item_id} is already completed (status success)` });
    expect(await itemRow(item.item_id)).toEqual(after);
    expect(await itemEvents(item.item_id)).toHaveLength(1);

    for (const status of ['failed', 'cancelled']) {
      const done = await makeItem({ status });
      const refused = await complete(done.item_id, { result: 'success' });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().error).toBe(`Discipline item ${done.item_id} is already completed (status ${status})`);
      await unchanged(done);
    }
  });

  it('400 for a bad retry_after_seconds or body, nothing written', async () => {
    const item = await makeItem();
    for (const [payload, error] of [
      [{ result: 'failed', retry_after_seconds: -1 }, 'body.retry_after_seconds must be >= 0'],
      [{ result: 'failed', retry_after_seconds: 3601 }, 'body.retry_after_seconds must be <= 3600'],
      [{ result: 'failed', retry_after_seconds: '10' }, 'body.retry_after_seconds must be number or null'],
      [{ result: 'success', retry_after_seconds: 5 }, 'body.retry_after_seconds applies only to result failed'],
      [{ result: 'done' }, 'body.result must be one of: success, failed'],
      [{ note: 'x' }, 'body.result is required'],
      [{ result: 'success', status: 'success' }, 'body.status is not an accepted field'],
      [{ result: 'success', note: 'x'.repeat(2001) }, 'body.note must NOT have more than 2000 characters'],
      [{ result: 'success', ref: 'x'.repeat(201) }, 'body.ref must NOT have more than 200 characters'],
    ] as const) {
      const res = await complete(item.item_id, payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
      expect(res.json()).toEqual({ success: false, code: 'VALIDATION_ERROR', error });
    }
    const badId = await complete(0, { result: 'success' });
    expect(badId.statusCode).toBe(400);
    expect(badId.json().error).toBe('params.item_id must be >= 1');
    await unchanged(item);
  });

  it('is for the API key only', async () => {
    const item = await makeItem();
    const director = await signedIn(t, { clearance: 5, rank: 'Director' });
    const res = await complete(item.item_id, { result: 'success' }, director.headers);
    expect(res.statusCode).toBe(401);
    await unchanged(item);
  });

  it('is atomic: a failure writing the event leaves the item as it was', async () => {
    const item = await makeItem();
    for (const payload of [{ result: 'success' }, { result: 'failed', retry_after_seconds: 10 }]) {
      const res = await complete(item.item_id, { ...payload, note: REFUSED_NOTE });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ success: false, code: 'DATABASE_ERROR' });
      await unchanged(item);
    }
  });
});

describe('POST /discipline/user-lookup/<item_id>/profile', () => {
  const deliver = (id: number, payload: unknown) => post(`/discipline/user-lookup/${id}/profile`, payload);

  it('stores the profile, completes the lookup, and answers idempotently on retry', async () => {
    const userId = chatId();
    const item = await makeItem({ kind: 'user_lookup', userId });
    const payload = { chat_id: userId, username: 'nightowl', global_name: 'Night Owl', avatar: 'a1b2', banner: 'kept' };
    const res = await deliver(item.item_id, payload);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({ success: true, profile: { chat_id: userId, username: 'nightowl', global_name: 'Night Owl', avatar: 'a1b2', updated_at: expect.any(String) } });
    expect(await profileRow(userId)).toEqual({ chat_id: userId, username: 'nightowl', global_name: 'Night Owl', avatar: 'a1b2', profile: payload, updated_at: body.profile.updated_at });
    const row = await itemRow(item.item_id);
    expect(row).toMatchObject({ status: 'success', result_note: 'Profile captured' });
    expect(row.completed_at).not.toBeNull();
    const expectedEvents = [
      {
        type: 'delivery.completed',
        actor_kind: 'bot',
        actor_chat_id: null,
        report_id: null,
        before: { status: 'processing' },
        after: { status: 'success' },
        data: { item_id: item.item_id, kind: 'user_lookup', user_id: userId },
        correlation_id: res.headers['x-request-id'],
      },
    ];
    expect(await itemEvents(item.item_id)).toEqual(expectedEvents);

    const retry = await deliver(item.item_id, { chat_id: userId, username: 'nightowl2' });
    expect(retry.statusCode).toBe(200);
    expect(retry.json().profile).toMatchObject({ chat_id: userId, username: 'nightowl2', global_name: null, avatar: null });
    expect(await profileRow(userId)).toMatchObject({ username: 'nightowl2', profile: { chat_id: userId, username: 'nightowl2' } });
    expect(await itemRow(item.item_id)).toEqual(row);
    expect(await itemEvents(item.item_id)).toEqual(expectedEvents);
  });

  it('400 when chat_id is not the lookup target, nothing written', async () => {
    const userId = chatId();
    const other = chatId();
    const item = await makeItem({ kind: 'user_lookup', userId });
    const res = await deliver(item.item_id, { chat_id: other, username: 'someone' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, code: 'VALIDATION_ERROR', error: `body.chat_id must match the lookup target ${userId}` });
    const bad = await deliver(item.item_id, { username: 'someone' });
    expect(bad.json()).toMatchObject({ error: 'body.chat_id is required' });
    expect(await profileRow(userId)).toBeUndefined();
    expect(await profileRow(other)).toBeUndefined();
    await unchanged(item);
  });

  it('404 for an unknown item or one that is not a user_lookup', async () => {
    const issue = await makeItem();
    const res = await deliver(issue.item_id, { chat_id: issue.user_id });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_NOT_FOUND', error: `Discipline item ${issue.item_id} not found` });
    expect((await deliver(987654321, { chat_id: issue.user_id })).statusCode).toBe(404);
    expect(await profileRow(issue.user_id)).toBeUndefined();
    await unchanged(issue);
  });

  it('409 on a failed or cancelled lookup, nothing written', async () => {
    for (const status of ['failed', 'cancelled']) {
      const userId = chatId();
      const item = await makeItem({ kind: 'user_lookup', userId, status });
      const res = await deliver(item.item_id, { chat_id: userId, username: 'late' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_ALREADY_COMPLETED', error: `Discipline item ${item.item_id} is already completed (status ${status})` });
      expect(await profileRow(userId)).toBeUndefined();
      await unchanged(item);
    }
  });

  it('is atomic: a failure writing the event stores no profile', async () => {
    const item = await makeItem({ kind: 'user_lookup', userId: REFUSED_USER });
    const res = await deliver(item.item_id, { chat_id: REFUSED_USER, username: 'ghost' });
    expect(res.statusCode).toBe(500);
    expect(await profileRow(REFUSED_USER)).toBeUndefined();
    await unchanged(item);
  });
});

describe('POST /discipline/<item_id>/requeue', () => {
  const requeue = (id: number, headers: Record<string, string> = key) => post(`/discipline/${id}/requeue`, undefined, headers);

  it('failed to pending with attempts reset, delivery.requeued by the agent', async () => {
    const manager = await signedIn(t, { clearance: 4 });
    const report = await makeReport();
    const item = await makeItem({ reportId: report, status: 'failed', attempts: 3, lastError: 'Rate limited' });
    const res = await requeue(item.item_id, manager.headers);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.item).toMatchObject({ item_id: item.item_id, status: 'pending', attempts: 0, claimed_at: null, completed_at: null, last_error: 'Rate limited', punishment: { report_id: report } });
    expect(Math.abs(secondsFromNow(body.item.available_at))).toBeLessThan(10);
    expect(await itemRow(item.item_id)).toMatchObject({ status: 'pending', attempts: 0, completed_at: null, available_at: body.item.available_at });
    expect(await itemEvents(item.item_id)).toEqual([
      {
        type: 'delivery.requeued',
        actor_kind: 'agent',
        actor_chat_id: manager.agent.chat_id,
        report_id: report,
        before: { status: 'failed', attempts: 3 },
        after: { status: 'pending', attempts: 0 },
        data: { item_id: item.item_id, kind: 'issue', punishment_id: item.punishment_id, last_error: 'Rate limited' },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
    // The requeued item is handed out again.
    await t.db.production.query(`update discipline_deliveries set status = 'cancelled' where status = 'pending' and item_id <> $1::bigint`, [item.item_id]);
    const pickup = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(pickup.json().item).toMatchObject({ item_id: item.item_id, attempts: 1 });
  });

  it('the key may requeue too', async () => {
    const item = await makeItem({ status: 'failed' });
    const res = await requeue(item.item_id);
    expect(res.statusCode).toBe(200);
    expect(await itemEvents(item.item_id)).toEqual([expect.objectContaining({ type: 'delivery.requeued', actor_kind: 'bot' })]);
  });

  it('409 NOT_FAILED unless failed, 404 when unknown, 403 below manage_punishments: nothing written', async () => {
    for (const status of ['pending', 'processing', 'success', 'cancelled']) {
      const item = await makeItem({ status });
      const res = await requeue(item.item_id);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, code: 'NOT_FAILED', error: `Only a failed item can be requeued (status ${status})` });
      await unchanged(item);
    }
    const missing = await requeue(987654321);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('DISCIPLINE_NOT_FOUND');

    const item = await makeItem({ status: 'failed' });
    const viewer = await signedIn(t, { clearance: 3 });
    const res = await requeue(item.item_id, viewer.headers);
    expect(res.statusCode).toBe(403);
    await unchanged(item);
  });

  it('409 LOOKUP_PENDING for a failed lookup whose user has a newer one outstanding', async () => {
    const userId = chatId();
    const failed = await makeItem({ kind: 'user_lookup', userId, status: 'failed' });
    await makeItem({ kind: 'user_lookup', userId, status: 'pending', attempts: 0 });
    const res = await requeue(failed.item_id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, code: 'LOOKUP_PENDING', error: `A user lookup is already pending for ${userId}` });
    await unchanged(failed);
  });
});

describe.runIf(onPostgres)('concurrent completions (PostgreSQL only)', () => {
  it('two completions of one item: one 200, one 409, one event', async () => {
    const item = await makeItem();
    const answers = await Promise.all([complete(item.item_id, { result: 'success', ref: 'a' }), complete(item.item_id, { result: 'failed', note: 'b' })]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const loser = answers.find((r) => r.statusCode === 409)!;
    expect(loser.json().code).toBe('DISCIPLINE_ALREADY_COMPLETED');
    const winner = answers.find((r) => r.statusCode === 200)!.json().item;
    expect((await itemRow(item.item_id)).status).toBe(winner.status);
    const events = await itemEvents(item.item_id);
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe(winner.status === 'success' ? 'delivery.completed' : 'delivery.failed');
  });
});
