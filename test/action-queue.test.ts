// The bot's report action queues (spec: Report action queues; States and transitions, Report queue
// action; Limits; Errors ACTION_NOT_FOUND, ACTION_ALREADY_COMPLETED): answers, queue rows, events.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { STALE_FAILED_NOTE, STALE_REQUEUED_NOTE } from '../src/queue/sweep.js';
import { refuseInserts } from './helpers/failures.js';
import { createTestApp, PRODUCTION_KEY, queueNotificationsDelivered, type TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
beforeAll(async () => {
  // A one-minute stale timeout, so a claim backdated by two minutes is stale.
  t = await createTestApp({ env: { QUEUE_STALE_TIMEOUT_SECONDS: '60' } });
  // A mid-transaction failure on demand: events about reports whose id starts with FAIL- cannot
  // be written, after the earlier writes of their transaction have gone through.
  await refuseInserts(t.db.production, 'refuse_fail_reports', `new.report_id like 'FAIL-%'`, ['events']);
});
afterAll(() => t.close());
// Pickups and lists see the whole queue: each test starts from an empty one.
beforeEach(async () => {
  await t.db.production.query('delete from report_actions');
});

type Row = Record<string, any>;
let seq = 0;

async function makeReport(seed: { prefix?: string; is_supervisor?: boolean } = {}): Promise<string> {
  const id = `${seed.prefix ?? 'AQ'}-${process.pid}-${++seq}`;
  await t.db.production.query(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, is_supervisor, thread_id)
     values ($1::text, '300000000000000001', '300000000000000002', 'Harassment', '', '', 'quietstorm', 'NightOwl_88', $2::boolean, 'T-1')`,
    [id, seed.is_supervisor ?? false],
  );
  return id;
}

interface ActionSeed {
  queue?: 'operator' | 'supervisor';
  kind?: string;
  status?: string;
  attempts?: number;
  /** Seconds since the claim (a processing action is claimed now by default). */
  claimedAgo?: number;
  result_note?: string | null;
  last_error?: string | null;
}

/** An action written straight into the store; each one is younger than the one made before it. */
async function makeAction(reportId: string, seed: ActionSeed = {}): Promise<number> {
  const status = seed.status ?? 'pending';
  const claimedAgo = seed.claimedAgo ?? (status === 'pending' ? null : 0);
  const { rows } = await t.db.production.query<{ action_id: number }>(
    `insert into report_actions (report_id, kind, queue, status, payload, attempts, result_note, last_error, claimed_at, completed_at, created_at, updated_at)
     values ($1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::int, $7::text, $8::text,
       now() - make_interval(secs => $9::double precision),
       case when $4::text in ('success', 'failed', 'cancelled') then now() end,
       now() - make_interval(secs => $10::double precision), now() - make_interval(secs => $10::double precision))
     returning action_id`,
    [
      reportId,
      seed.kind ?? 'claim',
      seed.queue ?? 'operator',
      status,
      JSON.stringify({ reason: 'Because' }),
      seed.attempts ?? (status === 'pending' ? 0 : 1),
      seed.result_note ?? null,
      seed.last_error ?? null,
      claimedAgo,
      100_000 - ++seq,
    ],
  );
  return rows[0]!.action_id;
}

const actionRow = async (id: number) => (await t.db.production.query<Row>('select * from report_actions where action_id = $1::bigint', [id])).rows[0]!;
const events = async (reportId: string) =>
  (
    await t.db.production.query<Row>(
      'select type, actor_kind, actor_chat_id, before, after, data, is_supervisor, correlation_id from events where report_id = $1::text order by id',
      [reportId],
    )
  ).rows;

/** A GET; a pickup waits until the app has heard of the rows this file wrote behind its back. */
const get = async (url: string, headers: Record<string, string> = key) => {
  if (url.startsWith('/actions/next')) await queueNotificationsDelivered(t);
  return t.app.inject({ method: 'GET', url, headers });
};
const post = (url: string, headers: Record<string, string>, payload?: unknown) =>
  t.app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
const complete = (id: number | string, payload: unknown, headers: Record<string, string> = key) => post(`/actions/${id}/complete`, headers, payload);
const requeue = (id: number | string, headers: Record<string, string> = key) => post(`/actions/${id}/requeue`, headers);
const ids = (body: Row) => body.actions.map((a: Row) => a.action_id);
const refusal = (error: string, code: string) => ({ success: false, error, code });
const basics = (reportId: string, isSupervisor = false) => ({
  report_id: reportId,
  status: 'Open',
  reporter: '300000000000000001',
  reported: '300000000000000002',
  reporter_name: 'quietstorm',
  reported_name: 'NightOwl_88',
  reason: 'Harassment',
  assigned_agent: null,
  is_supervisor: isSupervisor,
  thread_id: 'T-1',
});
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe('GET /actions/pending', () => {
  it('pending and processing of both queues, oldest first, with report basics', async () => {
    const op = await makeReport();
    const sup = await makeReport({ is_supervisor: true });
    const oldest = await makeAction(op);
    await makeAction(op, { status: 'success' });
    const processing = await makeAction(op, { status: 'processing', kind: 'investigate' });
    await makeAction(op, { status: 'failed' });
    await makeAction(op, { status: 'cancelled' });
    const supervisor = await makeAction(sup, { queue: 'supervisor', kind: 'validate' });
    const res = await get('/actions/pending');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, count: 3 });
    expect(ids(body)).toEqual([oldest, processing, supervisor]);
    expect(body.actions[0]).toEqual({
      action_id: oldest,
      report_id: op,
      kind: 'claim',
      queue: 'operator',
      status: 'pending',
      payload: { reason: 'Because' },
      attempts: 0,
      result_note: null,
      last_error: null,
      requested_by: null,
      claimed_at: null,
      completed_at: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      report: basics(op),
    });
    expect(body.actions[1]).toMatchObject({ status: 'processing', attempts: 1, claimed_at: expect.stringMatching(ISO) });
    expect(body.actions[2]).toMatchObject({ queue: 'supervisor', report: basics(sup, true) });
  });

  it('at most 50 rows, the oldest, with the full count', async () => {
    const op = await makeReport();
    await t.db.production.query(
      `insert into report_actions (report_id, kind, queue, created_at)
       select $1::text, 'claim', 'operator', now() - make_interval(secs => 1000 - n) from generate_series(1, 55) n`,
      [op],
    );
    const all = (await t.db.production.query<{ action_id: number }>('select action_id from report_actions order by created_at, action_id')).rows;
    const body = (await get('/actions/pending')).json();
    expect(body.count).toBe(55);
    expect(ids(body)).toEqual(all.slice(0, 50).map((r) => r.action_id));
  });

  it('key only: a session cookie, a wrong key or no credential get 401', async () => {
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    expect((await get('/actions/pending', director.headers)).statusCode).toBe(401);
    expect((await get('/actions/pending', { authorization: 'wrong' })).statusCode).toBe(401);
    expect((await get('/actions/pending', {})).json()).toEqual(refusal('Authentication required', 'UNAUTHORIZED'));
  });
});

describe('GET /actions/next', () => {
  it('204 with an empty body when nothing is pending, on each pickup route', async () => {
    const op = await makeReport();
    await makeAction(op, { status: 'processing' });
    await makeAction(op, { status: 'failed' });
    for (const url of ['/actions/next', '/actions/next/operator', '/actions/next/supervisor']) {
      const res = await get(url);
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      expect(res.headers['content-type']).toBeUndefined();
    }
  });

  it('claims the oldest pending action: processing, one attempt, claimed now', async () => {
    const op = await makeReport();
    const sup = await makeReport({ is_supervisor: true });
    const first = await makeAction(op);
    const second = await makeAction(sup, { queue: 'supervisor', kind: 'contact_closed' });
    const res = await get('/actions/next');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, action: { action_id: first, status: 'processing', attempts: 1, kind: 'claim', report: basics(op) } });
    expect(Date.now() - Date.parse(body.action.claimed_at)).toBeLessThan(60_000);
    expect(await actionRow(first)).toMatchObject({ status: 'processing', attempts: 1, claimed_at: body.action.claimed_at, completed_at: null });
    expect(await actionRow(second)).toMatchObject({ status: 'pending', attempts: 0, claimed_at: null });

    const next = (await get('/actions/next')).json();
    expect(next.action).toMatchObject({ action_id: second, queue: 'supervisor', status: 'processing', report: basics(sup, true) });
    expect((await get('/actions/next')).statusCode).toBe(204);
    // A claim is no state change of the report: no event is written.
    expect([...(await events(op)), ...(await events(sup))]).toEqual([]);
  });

  it('the operator and supervisor routes claim from their own queue only', async () => {
    const op = await makeReport();
    const sup = await makeReport({ is_supervisor: true });
    const supervisorAction = await makeAction(sup, { queue: 'supervisor' });
    const operatorAction = await makeAction(op);
    expect((await get('/actions/next/operator')).json().action.action_id).toBe(operatorAction);
    expect((await get('/actions/next/operator')).statusCode).toBe(204);
    expect((await actionRow(supervisorAction)).status).toBe('pending');
    expect((await get('/actions/next/supervisor')).json().action.action_id).toBe(supervisorAction);
    expect((await get('/actions/next/supervisor')).statusCode).toBe(204);
  });

  it('runs the stale sweep first: a stale claim comes back and is claimed, one past the cap fails', async () => {
    const op = await makeReport();
    const stale = await makeAction(op, { status: 'processing', attempts: 1, claimedAgo: 120 });
    const capped = await makeAction(op, { status: 'processing', attempts: 3, claimedAgo: 120, kind: 'investigate' });
    const fresh = await makeAction(op, { status: 'processing', attempts: 1, claimedAgo: 10 });
    const res = await get('/actions/next');
    expect(res.statusCode).toBe(200);
    expect(res.json().action).toMatchObject({ action_id: stale, status: 'processing', attempts: 2, last_error: STALE_REQUEUED_NOTE });
    expect(await actionRow(capped)).toMatchObject({ status: 'failed', attempts: 3, last_error: STALE_FAILED_NOTE, claimed_at: null, completed_at: expect.stringMatching(ISO) });
    expect(await actionRow(fresh)).toMatchObject({ status: 'processing', attempts: 1 });
    const correlation = res.headers['x-request-id'];
    const swept = { actor_kind: 'system', actor_chat_id: null, is_supervisor: false, correlation_id: correlation };
    const byAction = (await events(op)).sort((a, b) => a.data.action_id - b.data.action_id);
    expect(byAction).toEqual([
      {
        ...swept,
        type: 'queue.action_requeued',
        before: { status: 'processing' },
        after: { status: 'pending', attempts: 1 },
        data: { action_id: stale, kind: 'claim', swept: true, last_error: STALE_REQUEUED_NOTE },
      },
      {
        ...swept,
        type: 'queue.action_failed',
        before: { status: 'processing' },
        after: { status: 'failed', attempts: 3 },
        data: { action_id: capped, kind: 'investigate', swept: true, last_error: STALE_FAILED_NOTE },
      },
    ]);
    expect((await get('/actions/next')).statusCode).toBe(204);
  });

  it('key only: a session gets 401 and claims nothing', async () => {
    const op = await makeReport();
    const action = await makeAction(op);
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    for (const url of ['/actions/next', '/actions/next/operator']) expect((await get(url, director.headers)).statusCode).toBe(401);
    expect(await actionRow(action)).toMatchObject({ status: 'pending', attempts: 0 });
  });
});

describe('GET /actions/pending/operator and /actions/pending/supervisor', () => {
  async function seedBothQueues() {
    const op = await makeReport();
    const sup = await makeReport({ is_supervisor: true });
    return {
      op,
      pending: await makeAction(op),
      processing: await makeAction(op, { status: 'processing' }),
      success: await makeAction(op, { status: 'success', result_note: 'Posted' }),
      failed: await makeAction(op, { status: 'failed', attempts: 2, result_note: 'Chat API down', last_error: 'Chat API down' }),
      cancelled: await makeAction(op, { status: 'cancelled' }),
      supervisor: await makeAction(sup, { queue: 'supervisor' }),
    };
  }

  it('pending and processing by default; the status filter; failure metadata; one queue each', async () => {
    const s = await seedBothQueues();
    const byDefault = (await get('/actions/pending/operator')).json();
    expect(byDefault).toMatchObject({ success: true, count: 2 });
    expect(ids(byDefault)).toEqual([s.pending, s.processing]);

    const done = (await get('/actions/pending/operator?status=failed,success')).json();
    expect(ids(done)).toEqual([s.success, s.failed]);
    expect(done.actions[1]).toMatchObject({ status: 'failed', attempts: 2, result_note: 'Chat API down', last_error: 'Chat API down', report: basics(s.op) });
    expect(done.actions[0]).toMatchObject({ status: 'success', result_note: 'Posted', last_error: null });
    expect(ids((await get('/actions/pending/operator?status=cancelled')).json())).toEqual([s.cancelled]);

    const supervisor = (await get('/actions/pending/supervisor')).json();
    expect(supervisor).toMatchObject({ count: 1 });
    expect(ids(supervisor)).toEqual([s.supervisor]);
    expect(ids((await get('/actions/pending/supervisor?status=failed')).json())).toEqual([]);
  });

  it('limit and offset page through, with the full count', async () => {
    const s = await seedBothQueues();
    const all = 'pending,processing,success,failed,cancelled';
    const first = (await get(`/actions/pending/operator?status=${all}&limit=2`)).json();
    expect(first.count).toBe(5);
    expect(ids(first)).toEqual([s.pending, s.processing]);
    expect(ids((await get(`/actions/pending/operator?status=${all}&limit=2&offset=3`)).json())).toEqual([s.failed, s.cancelled]);
  });

  it('400 on an unknown or empty status and on limits out of bounds', async () => {
    const allowed = '(allowed: pending, processing, success, failed, cancelled)';
    const cases: Array<[string, string]> = [
      ['status=foo', `querystring.status: unknown status "foo" ${allowed}`],
      ['status=pending,foo', `querystring.status: unknown status "foo" ${allowed}`],
      ['status=', `querystring.status: unknown status "" ${allowed}`],
      ['status=pending,,failed', `querystring.status: unknown status "" ${allowed}`],
      ['limit=0', 'querystring.limit must be >= 1'],
      ['limit=501', 'querystring.limit must be <= 500'],
      ['limit=ten', 'querystring.limit must be integer'],
      ['offset=-1', 'querystring.offset must be >= 0'],
      ['queue=operator', 'querystring.queue is not an accepted field'],
    ];
    for (const [query, error] of cases) {
      const res = await get(`/actions/pending/operator?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json()).toEqual(refusal(error, 'VALIDATION_ERROR'));
    }
    expect((await get('/actions/pending/operator?limit=500')).statusCode).toBe(200);
  });

  it('sessions: manage_dockets for both, Senior Agent rank for the supervisor list; the key passes', async () => {
    await seedBothQueues();
    const agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const senior = await signedIn(t, { rank: 'Senior Agent', clearance: 2 });
    const lowClearance = await signedIn(t, { rank: 'Director', clearance: 1 });
    expect((await get('/actions/pending/operator', agent.headers)).json().count).toBe(2);
    const refused = await get('/actions/pending/supervisor', agent.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual(refusal('Senior Agent rank required', 'RANK_REQUIRED'));
    expect((await get('/actions/pending/supervisor', senior.headers)).json().count).toBe(1);
    expect((await get('/actions/pending/supervisor', key)).json().count).toBe(1);
    for (const url of ['/actions/pending/operator', '/actions/pending/supervisor']) {
      const res = await get(url, lowClearance.headers);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual(refusal('Insufficient clearance', 'INSUFFICIENT_CLEARANCE'));
      expect((await get(url, {})).statusCode).toBe(401);
    }
  });
});

describe('POST /actions/<action_id>/complete', () => {
  it('success: terminal row, queue.action_completed event by the bot, the action answered', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'processing', kind: 'contact_message' });
    const res = await complete(id, { result: 'success', note: 'Delivered' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      success: true,
      action: { action_id: id, status: 'success', result_note: 'Delivered', last_error: null, attempts: 1, report: basics(op) },
    });
    expect(body.action.completed_at).toMatch(ISO);
    expect(await actionRow(id)).toMatchObject({ status: 'success', result_note: 'Delivered', last_error: null, completed_at: body.action.completed_at });
    expect(await events(op)).toEqual([
      {
        type: 'queue.action_completed',
        actor_kind: 'bot',
        actor_chat_id: null,
        before: { status: 'processing' },
        after: { status: 'success', result_note: 'Delivered' },
        data: { action_id: id, kind: 'contact_message', queue: 'operator', attempts: 1, note: 'Delivered' },
        is_supervisor: false,
        correlation_id: res.headers['x-request-id'],
      },
    ]);
  });

  it('failed on the supervisor queue: the note is the last error; the event is supervisor-flagged', async () => {
    const sup = await makeReport({ is_supervisor: true });
    const id = await makeAction(sup, { queue: 'supervisor', status: 'processing', attempts: 2 });
    const res = await complete(id, { result: 'failed', note: 'Chat API down' });
    expect(res.statusCode).toBe(200);
    expect(res.json().action).toMatchObject({ status: 'failed', result_note: 'Chat API down', last_error: 'Chat API down', attempts: 2 });
    expect(await actionRow(id)).toMatchObject({ status: 'failed', result_note: 'Chat API down', last_error: 'Chat API down' });
    expect(await events(sup)).toEqual([
      expect.objectContaining({
        type: 'queue.action_failed',
        actor_kind: 'bot',
        before: { status: 'processing' },
        after: { status: 'failed', result_note: 'Chat API down' },
        data: { action_id: id, kind: 'claim', queue: 'supervisor', attempts: 2, note: 'Chat API down' },
        is_supervisor: true,
      }),
    ]);
  });

  it('a late completion of an action the sweep put back to pending is accepted; the note may be left out', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'pending', attempts: 1 });
    const res = await complete(id, { result: 'success' });
    expect(res.statusCode).toBe(200);
    expect(await actionRow(id)).toMatchObject({ status: 'success', result_note: null });
    expect(await events(op)).toEqual([
      expect.objectContaining({ type: 'queue.action_completed', before: { status: 'pending' }, after: { status: 'success', result_note: null }, data: expect.objectContaining({ note: null }) }),
    ]);
  });

  it('404 ACTION_NOT_FOUND for an unknown action', async () => {
    const res = await complete(999_999_999, { result: 'success' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(refusal('Queue action 999999999 not found', 'ACTION_NOT_FOUND'));
  });

  it('409 ACTION_ALREADY_COMPLETED once terminal, nothing written the second time', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'processing' });
    expect((await complete(id, { result: 'success', note: 'First' })).statusCode).toBe(200);
    const before = await actionRow(id);
    const res = await complete(id, { result: 'failed', note: 'Second' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual(refusal(`Queue action ${id} is already completed (status success)`, 'ACTION_ALREADY_COMPLETED'));
    expect(await actionRow(id)).toEqual(before);
    expect(await events(op)).toHaveLength(1);

    for (const status of ['failed', 'cancelled']) {
      const done = await makeAction(op, { status });
      const again = await complete(done, { result: 'success' });
      expect(again.statusCode).toBe(409);
      expect(again.json().error).toBe(`Queue action ${done} is already completed (status ${status})`);
      expect((await actionRow(done)).status).toBe(status);
    }
    expect(await events(op)).toHaveLength(1);
  });

  it('400 on a bad result, an unknown field, a long note or a bad id: nothing written', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'processing' });
    const before = await actionRow(id);
    const cases: Array<[number | string, unknown, string]> = [
      [id, { result: 'done' }, 'body.result must be one of: success, failed'],
      [id, {}, 'body.result is required'],
      [id, { result: 'success', ref: 'x' }, 'body.ref is not an accepted field'],
      [id, { result: 'success', note: 'x'.repeat(2001) }, 'body.note must NOT have more than 2000 characters'],
      [id, { result: 'success', note: 5 }, 'body.note must be string or null'],
      ['abc', { result: 'success' }, 'params.action_id must be integer'],
      [0, { result: 'success' }, 'params.action_id must be >= 1'],
    ];
    for (const [target, payload, error] of cases) {
      const res = await complete(target, payload);
      expect(res.statusCode, error).toBe(400);
      expect(res.json()).toEqual(refusal(error, 'VALIDATION_ERROR'));
    }
    expect(await actionRow(id)).toEqual(before);
    expect(await events(op)).toEqual([]);
    expect((await complete(id, { result: 'success', note: 'x'.repeat(2000) })).statusCode).toBe(200);
  });

  it('key only: sessions and missing credentials get 401, nothing written', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'processing' });
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    expect((await complete(id, { result: 'success' }, director.headers)).statusCode).toBe(401);
    expect((await complete(id, { result: 'success' }, {})).statusCode).toBe(401);
    expect((await complete(id, { result: 'success' }, { authorization: 'wrong' })).statusCode).toBe(401);
    expect(await actionRow(id)).toMatchObject({ status: 'processing', result_note: null, completed_at: null });
    expect(await events(op)).toEqual([]);
  });

  it('one transaction: when the event cannot be written the action stays as it was', async () => {
    const failing = await makeReport({ prefix: 'FAIL' });
    const id = await makeAction(failing, { status: 'processing' });
    const before = await actionRow(id);
    const res = await complete(id, { result: 'success', note: 'Done' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ success: false, code: 'DATABASE_ERROR' });
    expect(await actionRow(id)).toEqual(before);
    expect(await events(failing)).toEqual([]);
  });
});

describe('POST /actions/<action_id>/requeue', () => {
  it('failed back to pending with attempts reset and a queue.action_requeued event; the next pickup gets it', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'failed', attempts: 3, last_error: 'Chat API down', kind: 'validate' });
    const res = await requeue(id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      success: true,
      action: { action_id: id, status: 'pending', attempts: 0, claimed_at: null, completed_at: null, last_error: 'Chat API down', report: basics(op) },
    });
    expect(await actionRow(id)).toMatchObject({ status: 'pending', attempts: 0, claimed_at: null, completed_at: null });
    expect(await events(op)).toEqual([
      {
        type: 'queue.action_requeued',
        actor_kind: 'bot',
        actor_chat_id: null,
        before: { status: 'failed', attempts: 3 },
        after: { status: 'pending', attempts: 0 },
        data: { action_id: id, kind: 'validate', queue: 'operator' },
        is_supervisor: false,
        correlation_id: res.headers['x-request-id'],
      },
    ]);
    expect((await get('/actions/next')).json().action).toMatchObject({ action_id: id, attempts: 1 });
  });

  it('409 NOT_FAILED unless failed, 404 for an unknown action: nothing written', async () => {
    const op = await makeReport();
    for (const status of ['pending', 'processing', 'success', 'cancelled']) {
      const id = await makeAction(op, { status });
      const before = await actionRow(id);
      const res = await requeue(id);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual(refusal(`Only a failed action can be requeued (status ${status})`, 'NOT_FAILED'));
      expect(await actionRow(id)).toEqual(before);
    }
    expect(await events(op)).toEqual([]);
    const missing = await requeue(999_999_999);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual(refusal('Queue action 999999999 not found', 'ACTION_NOT_FOUND'));
    expect((await requeue('abc')).statusCode).toBe(400);
  });

  it('sessions: manage_dockets, and Senior Agent rank for the supervisor queue', async () => {
    const op = await makeReport();
    const sup = await makeReport({ is_supervisor: true });
    const agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const senior = await signedIn(t, { rank: 'Senior Agent', clearance: 2 });
    const lowClearance = await signedIn(t, { rank: 'Director', clearance: 1 });
    const supervisorAction = await makeAction(sup, { queue: 'supervisor', status: 'failed', attempts: 3 });
    const operatorAction = await makeAction(op, { status: 'failed', attempts: 2 });

    const refused = await requeue(supervisorAction, agent.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual(refusal('Senior Agent rank required', 'RANK_REQUIRED'));
    const low = await requeue(operatorAction, lowClearance.headers);
    expect(low.json()).toEqual(refusal('Insufficient clearance', 'INSUFFICIENT_CLEARANCE'));
    expect((await requeue(operatorAction, {})).statusCode).toBe(401);
    expect(await actionRow(supervisorAction)).toMatchObject({ status: 'failed', attempts: 3 });
    expect(await actionRow(operatorAction)).toMatchObject({ status: 'failed', attempts: 2 });
    expect([...(await events(op)), ...(await events(sup))]).toEqual([]);

    const mine = await requeue(operatorAction, agent.headers);
    expect(mine.statusCode).toBe(200);
    expect(await events(op)).toEqual([
      expect.objectContaining({ type: 'queue.action_requeued', actor_kind: 'agent', actor_chat_id: agent.agent.chat_id, is_supervisor: false, correlation_id: mine.headers['x-request-id'] }),
    ]);
    expect((await requeue(supervisorAction, senior.headers)).statusCode).toBe(200);
    expect(await actionRow(supervisorAction)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await events(sup)).toEqual([
      expect.objectContaining({ type: 'queue.action_requeued', actor_kind: 'agent', actor_chat_id: senior.agent.chat_id, is_supervisor: true, data: { action_id: supervisorAction, kind: 'claim', queue: 'supervisor' } }),
    ]);
  });
});

describe.runIf(onPostgres)('concurrent pickups and completions (PostgreSQL only)', () => {
  it('20 pickups at once on 10 pending actions: 10 distinct claims and 10 empty answers', async () => {
    const op = await makeReport();
    const seeded: number[] = [];
    for (let i = 0; i < 10; i++) seeded.push(await makeAction(op));
    const results = await Promise.all(Array.from({ length: 20 }, () => get('/actions/next')));
    const claimed = results.filter((r) => r.statusCode === 200).map((r) => r.json().action.action_id as number);
    expect(results.filter((r) => r.statusCode === 204)).toHaveLength(10);
    expect(claimed.sort((a, b) => a - b)).toEqual(seeded);
    const rows = (await t.db.production.query<Row>('select status, attempts from report_actions where report_id = $1::text', [op])).rows;
    expect(rows).toEqual(Array.from({ length: 10 }, () => ({ status: 'processing', attempts: 1 })));
  });

  it('two completions of one action at once: one 200, one 409, one event', async () => {
    const op = await makeReport();
    const id = await makeAction(op, { status: 'processing' });
    const results = await Promise.all([complete(id, { result: 'success' }), complete(id, { result: 'failed', note: 'x' })]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const winner = results.find((r) => r.statusCode === 200)!.json().action.status;
    expect(results.find((r) => r.statusCode === 409)!.json()).toEqual(refusal(`Queue action ${id} is already completed (status ${winner})`, 'ACTION_ALREADY_COMPLETED'));
    expect((await actionRow(id)).status).toBe(winner);
    expect(await events(op)).toHaveLength(1);
  });
});

describe('OpenAPI document', () => {
  it('describes the queue routes: tags, the bodiless 204, the action schema', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const next = doc.paths['/actions/next'].get;
    expect(next.tags).toEqual(['Report action queues']);
    expect(next.security).toEqual([{ apiKey: [] }]);
    expect(next.responses['204'].content).toBeUndefined();
    const action = next.responses['200'].content['application/json'].schema.properties.action;
    expect(action.required).toEqual(expect.arrayContaining(['action_id', 'status', 'attempts', 'result_note', 'last_error', 'report']));
    const complete = doc.paths['/actions/{action_id}/complete'].post;
    expect(Object.keys(complete.responses)).toEqual(expect.arrayContaining(['200', '400', '404', '409']));
    expect(complete.requestBody.content['application/json'].schema.properties.result.enum).toEqual(['success', 'failed']);
    expect(doc.paths['/actions/pending/supervisor'].get.security).toEqual([{ apiKey: [] }, { session: [] }]);
  });
});
