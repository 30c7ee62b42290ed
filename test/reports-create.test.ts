// POST /reports/create (spec: Reports): JSON and form bodies, the rows, timeline and event it writes,
// its refusals, and the created payload read back through GET /reports/<id>.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn } from './helpers/identity.js';
import { key, reportCrudHelpers, seedReportBody, type Row } from './helpers/reports.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const { newId, base, reportRow, timeline, events, evidence, create, createOk } = reportCrudHelpers(() => t);

describe('POST /reports/create', () => {
  it('writes the row, the timeline entry, the event and the initial evidence; 201 with the full report', async () => {
    const { res, id } = await create({ status: 'Pending', is_supervisor: true, reporter_name: 'Rae', evidence_url: 'https://cdn.example.test/clip.mp4', thread_id: 'T-1' });
    expect(res.statusCode).toBe(201);
    const report = res.json().report;
    expect(res.json().success).toBe(true);
    expect(report).toMatchObject({ report_id: id, status: 'Pending', is_supervisor: true, reporter_name: 'Rae', thread_id: 'T-1', assigned_agent: null, notes_list: [], chat_profiles: [] });
    expect(report.evidence_list).toEqual([expect.objectContaining({ description: 'Initial evidence', url: 'https://cdn.example.test/clip.mp4', submitted_by: null })]);
    expect(report.timeline).toEqual([expect.objectContaining({ event: 'Report created', actor_kind: 'bot' })]);
    const row = await reportRow(id);
    expect(row).toMatchObject({ status: 'Pending', is_supervisor: true });
    const [event] = await events(id);
    expect(event).toMatchObject({ type: 'report.created', actor_kind: 'bot', before: null, is_supervisor: true, after: expect.objectContaining({ report_id: id, status: 'Pending' }) });
    expect(await events(id)).toHaveLength(1);
  });

  it('a session is the actor and the submitter of the initial evidence; defaults Open, not flagged', async () => {
    const agent = await signedIn(t, { clearance: 2 });
    const { res, id } = await create({ evidence_url: 'http://example.test/a' }, agent.headers);
    expect(res.statusCode).toBe(201);
    expect(res.json().report).toMatchObject({ status: 'Open', is_supervisor: false });
    expect(await evidence(id)).toEqual([{ description: 'Initial evidence', url: 'http://example.test/a', submitted_by: agent.agent.chat_id }]);
    expect(await timeline(id)).toEqual([{ event: 'Report created', actor_kind: 'agent', actor_chat_id: agent.agent.chat_id }]);
    expect(await events(id)).toEqual([expect.objectContaining({ type: 'report.created', actor_kind: 'agent', actor_chat_id: agent.agent.chat_id, is_supervisor: false })]);
  });

  it('409 DUPLICATE on an existing id, with nothing else written', async () => {
    const id = await createOk({ evidence_url: 'https://example.test/1' });
    const { res } = await create({ report_id: id, reason: 'Other', evidence_url: 'https://example.test/2' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, error: `Report ${id} already exists`, code: 'DUPLICATE' });
    expect(await reportRow(id)).toMatchObject({ reason: 'Harassment in voice chat' });
    expect(await timeline(id)).toHaveLength(1);
    expect(await events(id)).toHaveLength(1);
    expect(await evidence(id)).toHaveLength(1);
  });

  it.each([
    [{ reason: undefined }, 'body.reason is required'],
    [{ notes: undefined }, 'body.notes is required'],
    [{ status: 'Closed' }, 'body.status must be one of: Open, Under Investigation, Pending, Appealed, Validated, Invalidated'],
    [{ evidence_url: 'javascript:alert(1)' }, 'body.evidence_url must match pattern'],
    [{ evidence_url: 'ftp://example.test/x' }, 'body.evidence_url must match pattern'],
    [{ is_supervisor: 'true' }, 'body.is_supervisor must be boolean'],
    [{ assigned_agent: 'bob' }, 'body.assigned_agent must match pattern'],
    [{ reporter: 'x'.repeat(101) }, 'body.reporter must NOT have more than 100 characters'],
    [{ report_id: '' }, 'body.report_id must NOT have fewer than 1 characters'],
    [{ priority: 'high' }, 'body.priority is not an accepted field'],
  ])('400 for %j, nothing written', async (overrides, error) => {
    const { res, id } = await create(overrides);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    expect(res.json().error.startsWith(error)).toBe(true);
    if (id) expect(await reportRow(id)).toBeUndefined();
  });

  it('accepts a form-encoded body: is_supervisor spelled true/false, empty optional fields absent', async () => {
    const form = (fields: Row) => t.app.inject({
      method: 'POST', url: '/reports/create', headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(fields).toString(),
    });
    const id = newId();
    const res = await form({ ...base(id), is_supervisor: 'true', evidence_url: '', thread_id: '', status: 'Appealed' });
    expect(res.statusCode).toBe(201);
    expect(res.json().report).toMatchObject({ report_id: id, is_supervisor: true, status: 'Appealed', evidence_url: null, thread_id: null });
    const off = await form({ ...base(), is_supervisor: 'false' });
    expect(off.json().report.is_supervisor).toBe(false);
    const bad = await form({ ...base(), is_supervisor: 'yes' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ success: false, error: 'body.is_supervisor must be true or false', code: 'VALIDATION_ERROR' });
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    expect(Object.keys(doc.paths['/reports/create'].post.requestBody.content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    // Form bodies are an opt-in of report creation only.
    const elsewhere = await t.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'status=Open' });
    expect(elsewhere.statusCode).toBe(415);
  });

  it('a session below supervisor rank may not create a supervisor-flagged report', async () => {
    const agent = await signedIn(t, { clearance: 5, rank: 'Senior Agent' });
    const { res, id } = await create({ is_supervisor: true }, agent.headers);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('SUPERVISOR_ONLY');
    expect(await reportRow(id)).toBeUndefined();
  });
});

describe('the created report payload', () => {
  it('is exactly what GET /reports/<id> reads back: names, profiles, evidence and timeline', async () => {
    const assignee = await signedIn(t, { clearance: 2, name: 'Quinn Assignee' });
    const reporter = chatId();
    await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: seedReportBody('PAYLOAD-SEED', reporter) });
    await t.app.inject({
      method: 'POST',
      url: '/reports/PAYLOAD-SEED/chat-profiles',
      headers: key,
      payload: { reporter: { chat_id: reporter, username: 'reporter_one', global_name: 'Reporter One', avatar: 'abc' } },
    });
    const res = await t.app.inject({
      method: 'POST',
      url: '/reports/create',
      headers: assignee.headers,
      payload: { ...seedReportBody('PAYLOAD-1', reporter), assigned_agent: assignee.agent.chat_id, evidence_url: 'https://evidence.example.org/1.png' },
    });
    expect(res.statusCode).toBe(201);
    const created = res.json().report;
    expect(created).toMatchObject({ assigned_agent_name: 'Quinn Assignee', evidence_list: [{ submitted_by_name: 'Quinn Assignee' }] });
    expect(created.chat_profiles).toEqual([expect.objectContaining({ chat_id: reporter, username: 'reporter_one' })]);
    const read = await t.app.inject({ url: '/reports/PAYLOAD-1', headers: key });
    expect(read.json().report).toEqual(created);
  });
});
