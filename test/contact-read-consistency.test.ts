// GET /reports/<id>/contact decides who may read the thread and reads it from one state (issue 38,
// finding 6): a flag committed while the thread is being read can never let a caller below
// supervisor rank receive the thread of a report flagged before the thread was read, nor a message
// written under the flag. Reports and threads are made through the bot's and the dashboard's routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DASHBOARD_ORIGIN, type TestApp } from './helpers/app.js';
import { holdTable, waitingFor } from './helpers/held-tables.js';
import { signedIn, type Person } from './helpers/identity.js';
import { key, reportCrudHelpers, type Row } from './helpers/reports.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
let agent: Person;
beforeAll(async () => {
  t = await createTestApp();
  agent = await signedIn(t, { rank: 'Agent', clearance: 2, name: 'Asha Assigned' });
});
afterAll(() => t.close());

const { createOk, patch } = reportCrudHelpers(() => t);
const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Row>(sql, values)).rows;
const get = (id: string, headers: Record<string, string>) => t.app.inject({ url: `/reports/${id}/contact`, headers });
const post = (url: string, headers: Record<string, string>, payload: unknown = {}) =>
  t.app.inject({ method: 'POST', url, headers: { ...headers, origin: DASHBOARD_ORIGIN }, payload: payload as object });

/** A report assigned to the Agent, its thread opened by the bot's contact_reporter action. */
async function reportWithThread(): Promise<string> {
  const id = await createOk({ assigned_agent: agent.agent.chat_id, status: 'Under Investigation' });
  expect((await post(`/reports/${id}/action`, key, { action: 'contact_reporter', reason: 'First contact' })).statusCode).toBe(200);
  return id;
}

describe('GET /reports/<id>/contact for those who may read it', () => {
  it('answers the assigned agent and the key the thread as the writes answered it, message for message', async () => {
    const id = await reportWithThread();
    expect((await post(`/reports/${id}/contact/reply`, agent.headers, { body: 'Could you send a screenshot?' })).statusCode).toBe(201);
    const responded = await post(`/reports/${id}/contact/respond`, key, { body: 'Here it is', sender_name: 'Rita Reporter' });
    expect(responded.statusCode).toBe(201);
    const stored = await q('select id, direction, body, sender_chat_id, sender_name, created_at from contact_messages where report_id = $1::text order by created_at, id', [id]);
    expect(stored.map((m) => m.body)).toEqual(['First contact', 'Could you send a screenshot?', 'Here it is']);
    const open = { success: true, thread: { report_id: id, messages: stored, closed: false, closed_at: null, closed_by: null, closed_by_name: null, message_count: 3 } };
    expect(responded.json()).toEqual(open);
    for (const headers of [agent.headers, key]) {
      const res = await get(id, headers);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(open);
    }

    const closed = await post(`/reports/${id}/contact/close`, agent.headers);
    expect(closed.statusCode).toBe(200);
    const [row] = await q('select closed_at, closed_by, closed_by_name from contact_threads where report_id = $1::text', [id]);
    expect(closed.json()).toEqual({ success: true, thread: { ...open.thread, closed: true, closed_at: row!.closed_at, closed_by: agent.agent.chat_id, closed_by_name: 'Asha Assigned' } });
    for (const headers of [agent.headers, key]) expect((await get(id, headers)).json()).toEqual(closed.json());
  });

  it('a report without a thread is 404 to those who may read it, refused as before to the others', async () => {
    const id = await createOk({ assigned_agent: agent.agent.chat_id });
    const none = { success: false, error: `No contact thread for report ${id}`, code: 'NOT_FOUND' };
    expect([(await get(id, agent.headers)).statusCode, (await get(id, agent.headers)).json()]).toEqual([404, none]);
    expect((await get(id, key)).json()).toEqual(none);
    const other = await signedIn(t, { rank: 'Agent', clearance: 2 });
    expect((await get(id, other.headers)).json()).toEqual({ success: false, error: 'Only the assigned agent may do this', code: 'NOT_ASSIGNED' });
    expect((await get('NO-SUCH-REPORT', key)).json()).toEqual({ success: false, error: 'Report NO-SUCH-REPORT not found', code: 'NOT_FOUND' });
  });
});

// PostgreSQL only: PGlite runs one statement at a time, so nothing commits in the middle of a read.
describe.runIf(onPostgres)('a flag committed while the thread is read (PostgreSQL)', () => {
  it('refuses the Agent the thread, and the message written under the flag', async () => {
    const id = await reportWithThread();
    expect((await get(id, agent.headers)).json().thread.messages.map((m: Row) => m.body)).toEqual(['First contact']);
    // Another session holds the messages table: the Agent's GET starts, and whatever it reads of the
    // report before it reads the messages it has read when it is seen waiting for them.
    const holder = await holdTable(t.urls.production!, 'contact_messages');
    try {
      const pending = get(id, agent.headers);
      await waitingFor(t.db.production, 'contact_messages');
      // The bot flags the report meanwhile (its PATCH reads no message), and the reporter's next
      // message is written after the flag, in the holding transaction (the bot's respond route
      // would wait for the table as the GET does).
      const flagged = await patch(id, { is_supervisor: true });
      expect(flagged.statusCode).toBe(200);
      await holder.query(`insert into contact_messages (report_id, direction, body, sender_name) values ($1::text, 'from_reporter', 'SECRET written under the flag', 'Rita')`, [id]);
      await holder.commit();
      const res = await pending;
      expect([res.statusCode, res.json()]).toEqual([403, { success: false, error: 'Supervisor reports require supervisor rank', code: 'SUPERVISOR_ONLY' }]);
      expect(res.body).not.toContain('SECRET');
      expect(res.body).not.toContain('First contact');
    } finally {
      await holder.close();
    }
    // The thread is whole for the bot.
    expect((await get(id, key)).json().thread.messages.map((m: Row) => m.body)).toEqual(['First contact', 'SECRET written under the flag']);
  });
});
