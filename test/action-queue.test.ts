// The bot's report action queues, pickups and lists (spec: Report action queues; States and
// transitions, Report queue action; Limits): the pending lists, the pickups and the OpenAPI document.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { STALE_FAILED_NOTE, STALE_REQUEUED_NOTE } from '../src/queue/sweep.js';
import type { TestApp } from './helpers/app.js';
import { basics, createQueueTestApp, emptyQueue, ids, ISO, key, queueHelpers, refusal } from './helpers/action-queue.js';
import { signedIn } from './helpers/identity.js';

let t: TestApp;
beforeAll(async () => {
  t = await createQueueTestApp();
});
afterAll(() => t.close());
beforeEach(() => emptyQueue(t));

const { makeReport, makeAction, actionRow, events, get } = queueHelpers(() => t);

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

  it('key only: a session cookie, a wrong key or no credential 401', async () => {
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    const session = await get('/actions/pending', director.headers);
    expect([session.statusCode, session.json()]).toEqual([401, expect.objectContaining({ success: false, code: 'KEY_REQUIRED' })]);
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

  it('any signed-in agent and the key (spec: "either", no permission named), Senior Agent rank for the supervisor list', async () => {
    await seedBothQueues();
    const agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const senior = await signedIn(t, { rank: 'Senior Agent', clearance: 1 });
    const lowClearance = await signedIn(t, { rank: 'Agent', clearance: 1 });
    expect((await get('/actions/pending/operator', agent.headers)).json().count).toBe(2);
    expect((await get('/actions/pending/operator', lowClearance.headers)).json().count).toBe(2);
    for (const who of [agent, lowClearance]) {
      const refused = await get('/actions/pending/supervisor', who.headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual(refusal('Senior Agent rank required', 'RANK_REQUIRED'));
    }
    expect((await get('/actions/pending/supervisor', senior.headers)).json().count).toBe(1);
    expect((await get('/actions/pending/supervisor', key)).json().count).toBe(1);
    for (const url of ['/actions/pending/operator', '/actions/pending/supervisor']) expect((await get(url, {})).statusCode).toBe(401);
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
