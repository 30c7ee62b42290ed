// Contact threads (spec: Contact threads; States and transitions, Contact thread): replying to the
// reporter and closing the thread, with every gate, every row written and rollback on failure.
import { describe, expect, it } from 'vitest';
import { refuseInserts } from './helpers/failures.js';
import { assigned, close, get, key, n, q, reply, report, rows, t, unchanged, useContactApp } from './helpers/contact.js';
import { signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

useContactApp();

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
    // Supervisor rank is not stated for the thread: an unassigned Supervisor is refused too (issue 28).
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 2 });
    expect((await reply(id, supervisor.headers)).json()).toMatchObject({ code: 'NOT_ASSIGNED' });
    await unchanged(id);
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
