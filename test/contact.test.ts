// Contact threads (spec: Contact threads; States and transitions, Contact thread): reading,
// replying, closing and the bot relaying the reporter's answers, with every gate and every row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refuseInserts } from './helpers/failures.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let assigned: Person;
beforeAll(async () => {
  t = await createTestApp();
  assigned = await signedIn(t, { rank: 'Agent', clearance: 2, name: 'Asha Assigned' });
});
afterAll(() => t.close());

const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query(sql, values)).rows as Record<string, any>[];

let n = 0;
interface ReportOptions {
  assignedTo?: string | null;
  supervisor?: boolean;
  thread?: 'open' | 'closed' | 'none';
}
/** A report (assigned to `assigned` unless told) with an open thread holding one agent message. */
async function report(options: ReportOptions = {}): Promise<string> {
  const id = `SVC-CASE-${String(++n).padStart(5, '0')}`;
  await q(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence, assigned_agent, is_supervisor, thread_id, updated_at)
     values ($1, 'reporter-1', 'reported-1', 'Spam', '', '', $2, $3, $4, now() - interval '1 hour')`,
    [id, options.assignedTo === undefined ? assigned.agent.chat_id : options.assignedTo, options.supervisor ?? false, `thread-${n}`],
  );
  const thread = options.thread ?? 'open';
  if (thread !== 'none') {
    await q(`insert into contact_threads (report_id, closed) values ($1, $2)`, [id, thread === 'closed']);
    await q(
      `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name, created_at)
       values ($1, 'to_reporter', 'First contact', $2, 'Asha Assigned', now() - interval '1 minute')`,
      [id, assigned.agent.chat_id],
    );
  }
  return id;
}

const rows = (id: string) =>
  Promise.all([
    q('select direction, body, sender_chat_id, sender_name from contact_messages where report_id = $1 order by id', [id]),
    q('select event, actor_kind, actor_chat_id, actor_name from report_timeline where report_id = $1 order by id', [id]),
    q('select type, actor_kind, actor_chat_id, report_id, before, after, data, is_supervisor, correlation_id from events where report_id = $1 order by id', [id]),
    q('select kind, queue, status, payload, requested_by from report_actions where report_id = $1 order by action_id', [id]),
    q('select closed, closed_at, closed_by, closed_by_name from contact_threads where report_id = $1', [id]),
    q(`select updated_at > now() - interval '1 minute' as bumped from reports where report_id = $1`, [id]),
  ]).then(([messages, timeline, events, actions, thread, report]) => ({ messages, timeline, events, actions, thread: thread[0], bumped: report[0]?.bumped }));

async function unchanged(id: string) {
  const r = await rows(id);
  expect(r.messages).toHaveLength(1);
  expect(r.timeline).toEqual([]);
  expect(r.events).toEqual([]);
  expect(r.actions).toEqual([]);
  expect(r.bumped).toBe(false);
}

const get = (id: string, headers: Record<string, string>) => t.app.inject({ url: `/reports/${id}/contact`, headers });
const reply = (id: string, headers: Record<string, string>, payload: unknown = { body: 'Could you send a screenshot?' }) =>
  t.app.inject({ method: 'POST', url: `/reports/${id}/contact/reply`, headers, payload: payload as object });
const close = (id: string, headers: Record<string, string>) => t.app.inject({ method: 'POST', url: `/reports/${id}/contact/close`, headers });
const respond = (id: string, headers: Record<string, string>, payload: unknown = { body: 'Here it is', sender_name: 'Rita Reporter' }) =>
  t.app.inject({ method: 'POST', url: `/reports/${id}/contact/respond`, headers, payload: payload as object });

describe('GET /reports/<id>/contact', () => {
  it('the thread, messages oldest first, for the assigned agent and the key', async () => {
    const id = await report();
    await q(`insert into contact_messages (report_id, direction, body, sender_name) values ($1, 'from_reporter', 'Later answer', 'Rita')`, [id]);
    for (const headers of [assigned.headers, key]) {
      const res = await get(id, headers);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        thread: {
          report_id: id,
          messages: [
            { id: expect.any(Number), direction: 'to_reporter', body: 'First contact', sender_chat_id: assigned.agent.chat_id, sender_name: 'Asha Assigned', created_at: expect.any(String) },
            { id: expect.any(Number), direction: 'from_reporter', body: 'Later answer', sender_chat_id: null, sender_name: 'Rita', created_at: expect.any(String) },
          ],
          closed: false,
          closed_at: null,
          closed_by: null,
          closed_by_name: null,
          message_count: 2,
        },
      });
    }
  });

  it('gates: credentials, clearance, assignment (supervisors allowed), supervisor reports', async () => {
    const id = await report();
    expect((await get(id, {})).statusCode).toBe(401);
    const low = await signedIn(t, { clearance: 1 });
    expect((await get(id, low.headers)).json()).toMatchObject({ code: 'INSUFFICIENT_CLEARANCE' });
    const other = await signedIn(t, { rank: 'Senior Agent', clearance: 3 });
    const refused = await get(id, other.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ success: false, error: 'Only the assigned agent may do this', code: 'NOT_ASSIGNED' });
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 3 });
    expect((await get(id, supervisor.headers)).statusCode).toBe(200);

    const flagged = await report({ supervisor: true });
    expect((await get(flagged, assigned.headers)).json()).toMatchObject({ code: 'SUPERVISOR_ONLY' });
    expect((await get(flagged, supervisor.headers)).statusCode).toBe(200);
    expect((await get(flagged, key)).statusCode).toBe(200);
  });

  it('404 for an unknown report and for a report without a thread', async () => {
    const missing = await get('SVC-CASE-99999', key);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ success: false, error: 'Report SVC-CASE-99999 not found', code: 'NOT_FOUND' });
    const id = await report({ thread: 'none' });
    const none = await get(id, assigned.headers);
    expect(none.statusCode).toBe(404);
    expect(none.json()).toEqual({ success: false, error: `No contact thread for report ${id}`, code: 'NOT_FOUND' });
  });
});

describe('POST /reports/<id>/contact/reply', () => {
  it('writes the message, timeline, event and queue row, bumps updated_at; 201 with the thread', async () => {
    const id = await report();
    const res = await reply(id, { ...assigned.headers, 'x-request-id': 'reply-1' });
    expect(res.statusCode).toBe(201);
    const thread = res.json().thread;
    expect(thread.message_count).toBe(2);
    expect(thread.messages[1]).toMatchObject({ direction: 'to_reporter', body: 'Could you send a screenshot?', sender_chat_id: assigned.agent.chat_id, sender_name: 'Asha Assigned' });
    const messageId = thread.messages[1].id;
    const r = await rows(id);
    expect(r.messages[1]).toEqual({ direction: 'to_reporter', body: 'Could you send a screenshot?', sender_chat_id: assigned.agent.chat_id, sender_name: 'Asha Assigned' });
    expect(r.timeline).toEqual([{ event: 'Agent replied to the reporter', actor_kind: 'agent', actor_chat_id: assigned.agent.chat_id, actor_name: 'Asha Assigned' }]);
    expect(r.events).toEqual([
      {
        type: 'contact.message_added', actor_kind: 'agent', actor_chat_id: assigned.agent.chat_id, report_id: id,
        before: null, after: null, data: { message_id: messageId, direction: 'to_reporter' }, is_supervisor: false, correlation_id: 'reply-1',
      },
    ]);
    expect(r.actions).toEqual([
      { kind: 'contact_message', queue: 'operator', status: 'pending', payload: { body: 'Could you send a screenshot?', message_id: messageId, thread_id: `thread-${n}` }, requested_by: assigned.agent.chat_id },
    ]);
    expect(r.bumped).toBe(true);
  });

  it('the key replies as the bot; a supervisor report goes to the supervisor queue', async () => {
    const id = await report({ supervisor: true, assignedTo: null });
    expect((await reply(id, key)).statusCode).toBe(201);
    const r = await rows(id);
    expect(r.messages[1]).toMatchObject({ sender_chat_id: null, sender_name: 'Automation bot' });
    expect(r.timeline).toEqual([{ event: 'Agent replied to the reporter', actor_kind: 'bot', actor_chat_id: null, actor_name: 'Automation bot' }]);
    expect(r.events[0]).toMatchObject({ type: 'contact.message_added', actor_kind: 'bot', is_supervisor: true });
    expect(r.actions).toEqual([expect.objectContaining({ kind: 'contact_message', queue: 'supervisor', requested_by: null })]);
  });

  it('403 for an agent who is not assigned, 403 below supervisor rank on a flagged report; nothing written', async () => {
    const id = await report();
    const other = await signedIn(t, { clearance: 3 });
    expect((await reply(id, other.headers)).json()).toMatchObject({ code: 'NOT_ASSIGNED' });
    await unchanged(id);
    const flagged = await report({ supervisor: true });
    expect((await reply(flagged, assigned.headers)).json()).toMatchObject({ code: 'SUPERVISOR_ONLY' });
    await unchanged(flagged);
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 2 });
    expect((await reply(id, supervisor.headers)).statusCode).toBe(201);
  });

  it('409 on a closed thread, 404 without a thread or report; nothing written', async () => {
    const id = await report({ thread: 'closed' });
    const res = await reply(id, assigned.headers);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, error: 'The contact thread is closed', code: 'THREAD_CLOSED' });
    await unchanged(id);
    expect((await reply(await report({ thread: 'none' }), assigned.headers)).statusCode).toBe(404);
    expect((await reply('SVC-CASE-99999', key)).statusCode).toBe(404);
  });

  it.each([
    [{}, 'body.body is required'],
    [{ body: '' }, 'body.body must NOT have fewer than 1 characters'],
    [{ body: 'x'.repeat(4001) }, 'body.body must NOT have more than 4000 characters'],
    [{ body: 5 }, 'body.body must be string'],
    [{ body: 'hi', sender_name: 'x' }, 'body.sender_name is not an accepted field'],
  ])('400 for %j', async (payload, error) => {
    const id = await report();
    const res = await reply(id, assigned.headers, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
    await unchanged(id);
  });

  it('a failure after the first writes leaves nothing behind', async () => {
    await refuseInserts(t.db.production, 'refuse_test_action', `new.report_id like 'SVC-CASE-F%'`, ['report_actions']);
    try {
      const id = 'SVC-CASE-F0001';
      await q(`insert into reports (report_id, reporter, reported, reason, notes, evidence, assigned_agent, updated_at)
               values ($1, 'r', 'd', 'x', '', '', $2, now() - interval '1 hour')`, [id, assigned.agent.chat_id]);
      await q(`insert into contact_threads (report_id) values ($1)`, [id]);
      await q(`insert into contact_messages (report_id, direction, body) values ($1, 'to_reporter', 'First contact')`, [id]);
      for (const send of [() => reply(id, assigned.headers), () => close(id, assigned.headers)]) {
        const res = await send();
        expect(res.statusCode).toBe(500);
        expect(res.json().error).toContain('refused for the test');
        await unchanged(id);
        expect((await rows(id)).thread).toMatchObject({ closed: false, closed_by: null });
      }
    } finally {
      await t.db.production.exec('drop trigger refuse_test_action on report_actions; drop function refuse_test_action();');
    }
  });
});

describe('POST /reports/<id>/contact/close', () => {
  it('closes with who and when, timeline, event, contact_closed queue row; 409 the second time', async () => {
    const id = await report();
    const res = await close(id, assigned.headers);
    expect(res.statusCode).toBe(200);
    const thread = res.json().thread;
    expect(thread).toMatchObject({ report_id: id, closed: true, closed_by: assigned.agent.chat_id, closed_by_name: 'Asha Assigned', message_count: 1 });
    expect(Date.parse(thread.closed_at)).toBeGreaterThan(Date.now() - 60_000);
    const r = await rows(id);
    expect(r.thread).toEqual({ closed: true, closed_at: thread.closed_at, closed_by: assigned.agent.chat_id, closed_by_name: 'Asha Assigned' });
    expect(r.timeline).toEqual([{ event: 'Contact thread closed', actor_kind: 'agent', actor_chat_id: assigned.agent.chat_id, actor_name: 'Asha Assigned' }]);
    expect(r.events).toEqual([
      expect.objectContaining({
        type: 'contact.thread_closed', actor_kind: 'agent', report_id: id, before: { closed: false },
        after: { closed: true, closed_at: thread.closed_at, closed_by: assigned.agent.chat_id, closed_by_name: 'Asha Assigned' },
      }),
    ]);
    expect(r.actions).toEqual([{ kind: 'contact_closed', queue: 'operator', status: 'pending', payload: { thread_id: `thread-${n}` }, requested_by: assigned.agent.chat_id }]);

    const again = await close(id, assigned.headers);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ success: false, error: 'The contact thread is already closed', code: 'THREAD_CLOSED' });
    expect((await rows(id)).events).toHaveLength(1);
    expect((await get(id, assigned.headers)).json().thread.closed).toBe(true);
  });

  it('the key closes as the bot (closed_by null); gates and 404 as for replies', async () => {
    const id = await report({ supervisor: true });
    expect((await close(id, assigned.headers)).json()).toMatchObject({ code: 'SUPERVISOR_ONLY' });
    await unchanged(id);
    const res = await close(id, key);
    expect(res.json().thread).toMatchObject({ closed: true, closed_by: null, closed_by_name: 'Automation bot' });
    expect((await rows(id)).actions).toEqual([expect.objectContaining({ kind: 'contact_closed', queue: 'supervisor', requested_by: null })]);
    const other = await signedIn(t, { clearance: 2 });
    const mine = await report();
    expect((await close(mine, other.headers)).json()).toMatchObject({ code: 'NOT_ASSIGNED' });
    await unchanged(mine);
    expect((await close(await report({ thread: 'none' }), key)).statusCode).toBe(404);
    expect((await close('SVC-CASE-99999', key)).statusCode).toBe(404);
    expect((await close(mine, {})).statusCode).toBe(401);
  });

  it.runIf(onPostgres)('PostgreSQL only: two concurrent closes, one wins and one gets 409', async () => {
    const id = await report();
    const results = await Promise.all([close(id, key), close(id, assigned.headers)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const r = await rows(id);
    expect(r.events).toHaveLength(1);
    expect(r.actions).toHaveLength(1);
  });
});

describe('POST /reports/<id>/contact/respond', () => {
  it('records the reporter message, timeline and event, no queue row; 201 with the thread', async () => {
    const id = await report({ supervisor: true });
    const res = await respond(id, key);
    expect(res.statusCode).toBe(201);
    expect(res.json().thread.messages[1]).toMatchObject({ direction: 'from_reporter', body: 'Here it is', sender_chat_id: null, sender_name: 'Rita Reporter' });
    const r = await rows(id);
    expect(r.messages[1]).toEqual({ direction: 'from_reporter', body: 'Here it is', sender_chat_id: null, sender_name: 'Rita Reporter' });
    expect(r.timeline).toEqual([{ event: 'Reporter responded', actor_kind: 'bot', actor_chat_id: null, actor_name: 'Automation bot' }]);
    expect(r.events).toEqual([
      expect.objectContaining({ type: 'contact.message_added', actor_kind: 'bot', data: { message_id: res.json().thread.messages[1].id, direction: 'from_reporter' }, is_supervisor: true }),
    ]);
    expect(r.actions).toEqual([]);
  });

  it('key only: a session gets 403; 404 and 409 as for replies; 400 on bad bodies', async () => {
    const id = await report();
    expect((await respond(id, assigned.headers)).statusCode).toBe(403);
    expect((await respond(id, { authorization: 'wrong' })).statusCode).toBe(401);
    await unchanged(id);
    expect((await respond('SVC-CASE-99999', key)).statusCode).toBe(404);
    expect((await respond(await report({ thread: 'none' }), key)).statusCode).toBe(404);
    const closed = await report({ thread: 'closed' });
    expect((await respond(closed, key)).json()).toEqual({ success: false, error: 'The contact thread is closed', code: 'THREAD_CLOSED' });
    await unchanged(closed);
    for (const [payload, error] of [
      [{ body: 'hi' }, 'body.sender_name is required'],
      [{ body: 'hi', sender_name: 'x'.repeat(101) }, 'body.sender_name must NOT have more than 100 characters'],
      [{ body: '', sender_name: 'R' }, 'body.body must NOT have fewer than 1 characters'],
    ] as const) {
      const res = await respond(id, key, payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe(error);
    }
    await unchanged(id);
  });
});
