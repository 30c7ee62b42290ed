// The bot's report action queues, completions and requeues (spec: Report action queues; States and
// transitions, Report queue action; Errors ACTION_NOT_FOUND, ACTION_ALREADY_COMPLETED): rows, events.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { basics, createQueueTestApp, emptyQueue, ISO, queueHelpers, refusal, type Row } from './helpers/action-queue.js';
import { signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await createQueueTestApp();
});
afterAll(() => t.close());
beforeEach(() => emptyQueue(t));

const { makeReport, makeAction, actionRow, events, get, complete, requeue } = queueHelpers(() => t);

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
