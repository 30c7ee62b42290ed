// Contact threads (spec: Contact threads): reading a thread (GET /reports/<id>/contact) and the bot
// relaying the reporter's answers (POST /reports/<id>/contact/respond), with every gate and every row.
import { describe, expect, it } from 'vitest';
import { assigned, get, key, q, report, respond, rows, t, unchanged, useContactApp } from './helpers/contact.js';
import { signedIn } from './helpers/identity.js';

useContactApp();

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
    // The thread is the assigned agent's: supervisor rank alone does not open it (issue 28).
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 3 });
    expect((await get(id, supervisor.headers)).json()).toMatchObject({ code: 'NOT_ASSIGNED' });

    const flagged = await report({ supervisor: true });
    expect((await get(flagged, assigned.headers)).json()).toMatchObject({ code: 'SUPERVISOR_ONLY' });
    expect((await get(flagged, supervisor.headers)).json()).toMatchObject({ code: 'NOT_ASSIGNED' });
    expect((await get(await report({ supervisor: true, assignedTo: supervisor.agent.chat_id }), supervisor.headers)).statusCode).toBe(200);
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

  it('key only: a session gets 401; 404 and 409 as for replies; 400 on bad bodies', async () => {
    const id = await report();
    expect((await respond(id, assigned.headers)).statusCode).toBe(401);
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
