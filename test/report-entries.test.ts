// Report notes, evidence and timeline entries (spec: Reports): the rows and events each writes, who
// may write them when, and their bounds. Authorization matrix and rollback: report-investigation.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { conflict, createReportTestApp, key, reportHelpers } from './helpers/report-actions.js';

let t: TestApp;
beforeAll(async () => {
  t = await createReportTestApp();
});
afterAll(() => t.close());

const { makeReport, timeline, events, queue, freshlyUpdated, nothingWritten, post } = reportHelpers(() => t);

describe('POST /reports/<id>/notes', () => {
  it('writes the note by the session author, timeline, report.note_added, updated_at', async () => {
    const agent = await signedIn(t, { clearance: 1 });
    const id = await makeReport({ status: 'Under Investigation', assigned_agent: agent.agent.chat_id });
    const res = await post(`/reports/${id}/notes`, agent.headers, { note: 'Reporter seems credible' });
    expect(res.statusCode).toBe(201);
    const { note, report } = res.json();
    expect(note).toEqual({
      id: expect.any(Number),
      report_id: id,
      note: 'Reporter seems credible',
      author_kind: 'agent',
      author_chat_id: agent.agent.chat_id,
      author_name: agent.agent.name,
      created_at: expect.any(String),
    });
    expect(report.notes_list).toEqual([expect.objectContaining({ id: note.id, note: 'Reporter seems credible' })]);
    expect((await timeline(id)).map((e) => e.event)).toEqual(['Note added']);
    expect(await events(id)).toEqual([expect.objectContaining({ type: 'report.note_added', actor_chat_id: agent.agent.chat_id, data: { note_id: note.id } })]);
    expect(await freshlyUpdated(id)).toBe(true);
    expect(await queue(id)).toEqual([]);
  });

  it('the bot writes on any status as author bot; sessions only during an investigation', async () => {
    const id = await makeReport({ status: 'Open' });
    const res = await post(`/reports/${id}/notes`, key, { note: 'From the bot' });
    expect(res.statusCode).toBe(201);
    expect(res.json().note).toMatchObject({ author_kind: 'bot', author_chat_id: null });
    const agent = await signedIn(t);
    for (const status of ['Open', 'Pending', 'Appealed', 'Validated', 'Invalidated']) {
      const report = await makeReport({ status, assigned_agent: agent.agent.chat_id });
      const refused = await post(`/reports/${report}/notes`, agent.headers, { note: 'x' });
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toEqual(conflict('Notes can only be added while an investigation is in progress', 'NOT_UNDER_INVESTIGATION'));
      await nothingWritten(report);
    }
  });

  it.each([
    [{}, 'body.note is required'],
    [{ note: '' }, 'body.note must NOT have fewer than 1 characters'],
    [{ note: 'x'.repeat(5001) }, 'body.note must NOT have more than 5000 characters'],
  ])('400 for %j', async (payload, error) => {
    const id = await makeReport({ status: 'Under Investigation' });
    const res = await post(`/reports/${id}/notes`, key, payload);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
    await nothingWritten(id);
  });
});

describe('POST /reports/<id>/evidence', () => {
  it('writes the evidence row with the session as submitter, timeline, report.updated event', async () => {
    const agent = await signedIn(t, { rank: 'Supervisor', clearance: 1 });
    const id = await makeReport({ status: 'Under Investigation' });
    const res = await post(`/reports/${id}/evidence`, agent.headers, { description: 'Chat log', url: 'https://example.com/log?id=1' });
    expect(res.statusCode).toBe(201);
    const { evidence, report } = res.json();
    expect(evidence).toEqual({
      id: expect.any(Number),
      report_id: id,
      description: 'Chat log',
      url: 'https://example.com/log?id=1',
      submitted_by: agent.agent.chat_id,
      submitted_by_id: agent.agent.chat_id,
      created_at: expect.any(String),
    });
    expect(report.evidence_list).toEqual([expect.objectContaining({ id: evidence.id, submitted_by_name: agent.agent.name })]);
    expect((await timeline(id)).map((e) => e.event)).toEqual(['Evidence added: Chat log']);
    expect(await events(id)).toEqual([expect.objectContaining({ type: 'report.updated', after: { evidence_id: evidence.id } })]);
    expect(await freshlyUpdated(id)).toBe(true);
    const byBot = await post(`/reports/${id}/evidence`, key, { description: 'Screenshot', url: 'HTTP://example.com/s.png' });
    expect(byBot.json().evidence).toMatchObject({ submitted_by: null, submitted_by_id: null });
  });

  it.each([
    'javascript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'ftp://example.com/file',
    'http://',
    ' https://example.com',
    'https://exa mple.com',
    'example.com/log',
  ])('400 for the url %j, nothing written', async (url) => {
    const id = await makeReport({ status: 'Under Investigation' });
    const res = await post(`/reports/${id}/evidence`, key, { description: 'x', url });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: 'body.url must be an http or https URL', code: 'VALIDATION_ERROR' });
    await nothingWritten(id);
  });

  it('400 for over-long fields, 409 for sessions outside an investigation', async () => {
    const id = await makeReport({ status: 'Pending' });
    const long = await post(`/reports/${id}/evidence`, key, { description: 'x', url: `https://example.com/${'a'.repeat(2000)}` });
    expect(long.json().error).toBe('body.url must NOT have more than 2000 characters');
    const desc = await post(`/reports/${id}/evidence`, key, { description: 'x'.repeat(1001), url: 'https://example.com' });
    expect(desc.json().error).toBe('body.description must NOT have more than 1000 characters');
    const agent = await signedIn(t, { rank: 'Director', clearance: 5 });
    const refused = await post(`/reports/${id}/evidence`, agent.headers, { description: 'x', url: 'https://example.com' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual(conflict('Evidence can only be added while an investigation is in progress', 'NOT_UNDER_INVESTIGATION'));
    await nothingWritten(id);
  });
});

describe('POST /reports/<id>/timeline', () => {
  it('writes the entry as the session, report.timeline_entry_added, updated_at', async () => {
    const agent = await signedIn(t);
    const id = await makeReport({ status: 'Under Investigation', assigned_agent: agent.agent.chat_id });
    const res = await post(`/reports/${id}/timeline`, agent.headers, { event: 'Called the reporter' });
    expect(res.statusCode).toBe(201);
    const { event, report } = res.json();
    expect(event).toEqual({
      id: expect.any(Number),
      report_id: id,
      event: 'Called the reporter',
      actor_kind: 'agent',
      actor_chat_id: agent.agent.chat_id,
      actor_name: agent.agent.name,
      created_at: expect.any(String),
    });
    expect(report.timeline).toEqual([expect.objectContaining({ id: event.id })]);
    expect(await events(id)).toEqual([expect.objectContaining({ type: 'report.timeline_entry_added', data: { timeline_id: event.id } })]);
    expect(await freshlyUpdated(id)).toBe(true);
  });

  it('the bot on any status; sessions 409 outside an investigation; 400 bounds', async () => {
    const id = await makeReport({ status: 'Validated' });
    expect((await post(`/reports/${id}/timeline`, key, { event: 'Bot note' })).json().event).toMatchObject({ actor_kind: 'bot', actor_name: 'Automation bot' });
    const agent = await signedIn(t);
    const open = await makeReport({ assigned_agent: agent.agent.chat_id });
    const refused = await post(`/reports/${open}/timeline`, agent.headers, { event: 'x' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('NOT_UNDER_INVESTIGATION');
    await nothingWritten(open);
    expect((await post(`/reports/${open}/timeline`, key, { event: 'x'.repeat(2001) })).json().error).toBe('body.event must NOT have more than 2000 characters');
    expect((await post(`/reports/${open}/timeline`, key, { event: '' })).statusCode).toBe(400);
  });
});
