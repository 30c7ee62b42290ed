// Shared by the contact thread tests (test/contact-*.test.ts): the app and its assigned agent, reports
// with threads written behind its back, the rows a contact route writes, and the requests. `t`,
// `assigned` and `n` are live bindings, set by useContactApp's beforeAll and by report().
import { afterAll, beforeAll, expect } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './app.js';
import { signedIn, type Person } from './identity.js';

export const key = { authorization: PRODUCTION_KEY };
export let t: TestApp;
export let assigned: Person;
/** Call once at the top of a test file: builds the app and the assigned agent, closes the app after. */
export function useContactApp(): void {
  beforeAll(async () => {
    t = await createTestApp();
    assigned = await signedIn(t, { rank: 'Agent', clearance: 2, name: 'Asha Assigned' });
  });
  afterAll(() => t.close());
}

export const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query(sql, values)).rows as Record<string, any>[];

/** The number of the last report() made (its thread is `thread-<n>`). */
export let n = 0;

export interface ReportOptions {
  assignedTo?: string | null;
  supervisor?: boolean;
  thread?: 'open' | 'closed' | 'none';
}
/** A report (assigned to `assigned` unless told) with an open thread holding one agent message. */
export async function report(options: ReportOptions = {}): Promise<string> {
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

export const rows = (id: string) =>
  Promise.all([
    q('select direction, body, sender_chat_id, sender_name from contact_messages where report_id = $1 order by id', [id]),
    q('select event, actor_kind, actor_chat_id, actor_name from report_timeline where report_id = $1 order by id', [id]),
    q('select type, actor_kind, actor_chat_id, report_id, before, after, data, is_supervisor, correlation_id from events where report_id = $1 order by id', [id]),
    q('select kind, queue, status, payload, requested_by from report_actions where report_id = $1 order by action_id', [id]),
    q('select closed, closed_at, closed_by, closed_by_name from contact_threads where report_id = $1', [id]),
    q(`select updated_at > now() - interval '1 minute' as bumped from reports where report_id = $1`, [id]),
  ]).then(([messages, timeline, events, actions, thread, report]) => ({ messages, timeline, events, actions, thread: thread[0], bumped: report[0]?.bumped }));

export async function unchanged(id: string) {
  const r = await rows(id);
  expect(r.messages).toHaveLength(1);
  expect(r.timeline).toEqual([]);
  expect(r.events).toEqual([]);
  expect(r.actions).toEqual([]);
  expect(r.bumped).toBe(false);
}

export const get = (id: string, headers: Record<string, string>) => t.app.inject({ url: `/reports/${id}/contact`, headers });
export const reply = (id: string, headers: Record<string, string>, payload: unknown = { body: 'Could you send a screenshot?' }) =>
  t.app.inject({ method: 'POST', url: `/reports/${id}/contact/reply`, headers, payload: payload as object });
export const close = (id: string, headers: Record<string, string>) => t.app.inject({ method: 'POST', url: `/reports/${id}/contact/close`, headers });
export const respond = (id: string, headers: Record<string, string>, payload: unknown = { body: 'Here it is', sender_name: 'Rita Reporter' }) =>
  t.app.inject({ method: 'POST', url: `/reports/${id}/contact/respond`, headers, payload: payload as object });
