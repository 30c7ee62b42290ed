// The four places a review got through (issue 28), each as it was found: a report flagged after the
// fact read through its queue items, events and admin audit rows; the assignment gate stepped
// around with a resent assignee; supervisor rank let into the contact thread and the timeline.
// (The fourth, callers without credentials, is test/unauthenticated-limits.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DASHBOARD_ORIGIN, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { key, reportCrudHelpers, type Row } from './helpers/reports.js';
import { everyTable } from './helpers/tables.js';

let t: TestApp;
let agent: Person;
let senior: Person;
let director: Person;
let punishmentId: string;
beforeAll(async () => {
  t = await createTestApp();
  agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
  senior = await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true });
  director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
});
afterAll(() => t.close());

const { createOk, patch } = reportCrudHelpers(() => t);
const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Row>(sql, values)).rows;
const get = (url: string, headers: Record<string, string>) => t.app.inject({ url, headers });
const post = (url: string, headers: Record<string, string>, payload: unknown = {}) =>
  t.app.inject({ method: 'POST', url, headers: { ...headers, origin: DASHBOARD_ORIGIN }, payload: payload as object });

describe('a report flagged supervisor after the fact', () => {
  let id: string;
  let actionId: number;
  beforeAll(async () => {
    id = await createOk({ reason: 'SECRET-REASON about a staff member', assigned_agent: director.agent.chat_id });
    const acted = await post(`/reports/${id}/action`, director.headers, { action: 'investigate', reason: 'SECRET-PAYLOAD' });
    expect(acted.statusCode).toBe(200);
    actionId = Number((await q('select action_id from report_actions where report_id = $1::text', [id]))[0]!.action_id);
    const corrected = await post(`/admin/reports/${id}/correct`, director.headers, { fields: { reporter_name: 'SECRET-NAME' }, reason: 'typo' });
    expect(corrected.statusCode).toBe(200);
    const issued = await post('/punishments', director.headers, { user_id: '300000000000000001', reason: 'SECRET-PUNISHMENT', report_id: id });
    expect(issued.statusCode).toBe(201);
    punishmentId = issued.json().punishment.punishment_id;
    // Visible to the Agent before the flag: the test would pass by finding nothing otherwise.
    expect(JSON.stringify((await get('/actions/pending/operator', agent.headers)).json())).toContain('SECRET-PAYLOAD');
    const flagged = await patch(id, { is_supervisor: true });
    expect(flagged.statusCode).toBe(200);
  });

  it('moves its waiting actions to the supervisor queue in the same change', async () => {
    expect(await q('select queue, status from report_actions where action_id = $1::bigint', [actionId])).toEqual([{ queue: 'supervisor', status: 'pending' }]);
    const operator = (await get('/actions/pending/operator', agent.headers)).json();
    expect(operator.actions.map((a: Row) => a.action_id)).not.toContain(actionId);
    expect(JSON.stringify(operator)).not.toContain('SECRET');
    // The operator pickup never hands it out; the supervisor pickup does.
    expect((await get('/actions/next/operator', key)).statusCode).toBe(204);
    expect(await q('select status from report_actions where action_id = $1::bigint', [actionId])).toEqual([{ status: 'pending' }]);
  });

  it('shows a Senior Agent its queue item as a placeholder on the supervisor list', async () => {
    const res = await get('/actions/pending/supervisor', senior.headers);
    expect(res.statusCode).toBe(200);
    const item = res.json().actions.find((a: Row) => a.action_id === actionId);
    expect(item).toMatchObject({ action_id: actionId, queue: 'supervisor', payload: {}, result_note: null, last_error: null, restricted: true, report: { report_id: id, is_supervisor: true, restricted: true } });
    expect(JSON.stringify(res.json())).not.toContain('SECRET');
    const asDirector = (await get('/actions/pending/supervisor', director.headers)).json().actions.find((a: Row) => a.action_id === actionId);
    expect(asDirector).toMatchObject({ payload: { reason: 'SECRET-PAYLOAD' }, report: { reason: 'SECRET-REASON about a staff member' } });
  });

  it('keeps its events out of GET /audit for a clearance-4 Senior Agent, whatever the parameters', async () => {
    for (const query of ['', `?report_id=${id}`, `?search=${id}`, '?search=SECRET', '?supervisor=only', '?event=report']) {
      const res = await get(`/audit${query}`, senior.headers);
      expect(res.statusCode, query).toBe(200);
      expect(res.json().events.filter((e: Row) => e.report_id === id), query).toEqual([]);
      expect(JSON.stringify(res.json()), query).not.toContain('SECRET');
    }
    const all = (await get(`/audit?report_id=${id}`, director.headers)).json();
    expect(all.events.map((e: Row) => e.type)).toEqual(expect.arrayContaining(['report.created', 'report.updated', 'admin.report_corrected', 'punishment.issued']));
    // Its events were written unflagged; what they are now is the report's flag.
    expect(all.events.every((e: Row) => e.is_supervisor === true)).toBe(true);
    expect(await q("select count(*)::int as n from events where report_id = $1::text and type = 'report.created' and not is_supervisor", [id])).toEqual([{ n: 1 }]);
  });

  it("keeps the correction's and the punishment's admin audit rows from an allowlisted Senior Agent", async () => {
    const seen = (await get('/admin/audit?limit=200', senior.headers)).json();
    expect(JSON.stringify(seen)).not.toContain('SECRET');
    expect(seen.rows.filter((r: Row) => r.target === id)).toEqual([]);
    const byDirector = (await get(`/admin/audit?target=${id}`, director.headers)).json();
    expect(byDirector.rows).toEqual([expect.objectContaining({ action: 'admin.report_corrected', after: { reporter_name: 'SECRET-NAME' } })]);
  });

  it('answers 403 to the report and hides the punishment citing it', async () => {
    expect((await get(`/reports/${id}`, agent.headers)).statusCode).toBe(403);
    const list = (await get('/punishments', senior.headers)).json();
    expect(JSON.stringify(list)).not.toContain('SECRET');
    // The placeholder carries nothing of the report, not even its id (issue 38).
    expect(list.punishments.find((p: Row) => p.punishment_id === punishmentId)).toMatchObject({ restricted: true, report_id: null });
    expect(JSON.stringify(list)).not.toContain(id);
  });
});

describe('the assignment gate', () => {
  it('is not stepped around by resending the current assignee beside other fields', async () => {
    const assignee = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const head = await signedIn(t, { rank: 'Head Investigator', clearance: 5 });
    const id = await createOk({ assigned_agent: assignee.agent.chat_id });
    const before = await everyTable(t.db.production);
    const res = await patch(id, { assigned_agent: assignee.agent.chat_id, status: 'Pending', reporter: '300000000000000009' }, { ...head.headers, origin: DASHBOARD_ORIGIN });
    expect([res.statusCode, res.json()]).toEqual([403, { success: false, error: 'Only the assigned agent may do this', code: 'NOT_ASSIGNED' }]);
    const after = await everyTable(t.db.production);
    expect(after).toEqual(before);
    // Reassigning alone is theirs to do.
    expect((await patch(id, { assigned_agent: head.agent.chat_id }, head.headers)).statusCode).toBe(200);
  });
});

describe('supervisor rank where the spec does not state it', () => {
  it('does not open the contact thread or the timeline to an unassigned Supervisor', async () => {
    const assignee = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 5 });
    const id = await createOk({ assigned_agent: assignee.agent.chat_id, status: 'Under Investigation' });
    expect((await post(`/reports/${id}/action`, key, { action: 'contact_reporter', reason: 'Hello' })).statusCode).toBe(200);
    const before = await everyTable(t.db.production);
    const NOT_ASSIGNED = { success: false, error: 'Only the assigned agent may do this', code: 'NOT_ASSIGNED' };
    for (const res of [
      await get(`/reports/${id}/contact`, supervisor.headers),
      await post(`/reports/${id}/contact/reply`, supervisor.headers, { body: 'From a supervisor' }),
      await post(`/reports/${id}/contact/close`, supervisor.headers),
      await post(`/reports/${id}/timeline`, supervisor.headers, { event: 'A supervisor entry' }),
    ]) {
      expect([res.statusCode, res.json()]).toEqual([403, NOT_ASSIGNED]);
    }
    expect(await everyTable(t.db.production)).toEqual(before);
    // Notes and evidence are where the spec states supervisor rank.
    expect((await post(`/reports/${id}/notes`, supervisor.headers, { note: 'A supervisor note' })).statusCode).toBe(201);
    expect((await get(`/reports/${id}/contact`, assignee.headers)).statusCode).toBe(200);
  });
});
