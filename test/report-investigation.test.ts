// Report investigations, notes, evidence and timeline entries, with the authorization matrix and
// rollback of every report route (spec: Reports, "States and transitions" Report): rows and events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { conflict, createReportTestApp, key, reportHelpers, STATUS_CHANGED, type ReportSeed } from './helpers/report-actions.js';

let t: TestApp;
beforeAll(async () => {
  t = await createReportTestApp();
});
afterAll(() => t.close());

const { makeReport, q, reportRow, timeline, events, queue, freshlyUpdated, nothingWritten, post, act } = reportHelpers(() => t);

describe('authorization matrix', () => {
  const withAssignment = async (person: Person | null, assigned: boolean, seed: ReportSeed = {}) =>
    makeReport({ ...seed, assigned_agent: assigned && person ? person.agent.chat_id : null });

  it('action (manage_dockets, clearance 2): credentials, clearance, assignment', async () => {
    const id = await makeReport();
    expect((await act(id, {}, 'investigate')).statusCode).toBe(401);
    expect((await act(id, { authorization: 'wrong' }, 'investigate')).statusCode).toBe(401);
    await nothingWritten(id);
    for (let clearance = 1; clearance <= 5; clearance++) {
      for (const rank of ['Agent', 'Director'] as const) {
        const person = await signedIn(t, { clearance, rank });
        for (const assigned of [true, false]) {
          const report = await withAssignment(person, assigned);
          const res = await act(report, person.headers, 'investigate');
          const label = `clearance ${clearance}, ${rank}, assigned ${assigned}`;
          if (clearance < 2) {
            expect(res.statusCode, label).toBe(403);
            expect(res.json().code).toBe('INSUFFICIENT_CLEARANCE');
          } else if (!assigned) {
            // Supervisor rank does not lift the assignment gate of an action.
            expect(res.statusCode, label).toBe(403);
            expect(res.json()).toEqual({ success: false, error: 'Only the assigned agent may do this', code: 'NOT_ASSIGNED' });
          } else {
            expect(res.statusCode, label).toBe(200);
          }
          if (res.statusCode !== 200) await nothingWritten(report);
        }
      }
    }
    expect((await act(id, key, 'investigate')).statusCode).toBe(200);
  });

  const gated: [string, string, number, (id: string) => unknown][] = [
    ['/notes', 'add_case_note', 1, () => ({ note: 'A note' })],
    ['/evidence', 'add_evidence', 1, () => ({ description: 'Log', url: 'https://example.com/log' })],
    ['/timeline', 'manage_dockets', 2, () => ({ event: 'Called the reporter' })],
  ];
  it.each(gated)('%s (%s, clearance %i): assigned agent or supervisor rank', async (suffix, _permission, level, payload) => {
    const id = await makeReport({ status: 'Under Investigation' });
    expect((await post(`/reports/${id}${suffix}`, {}, payload(id))).statusCode).toBe(401);
    expect((await post(`/reports/${id}${suffix}`, key, payload(id))).statusCode).toBe(201);
    for (let clearance = 1; clearance <= 5; clearance++) {
      for (const rank of ['Senior Agent', 'Supervisor'] as const) {
        const person = await signedIn(t, { clearance, rank });
        for (const assigned of [true, false]) {
          const report = await withAssignment(person, assigned, { status: 'Under Investigation' });
          const res = await post(`/reports/${report}${suffix}`, person.headers, payload(report));
          const label = `clearance ${clearance}, ${rank}, assigned ${assigned}`;
          const expected = clearance < level ? 'INSUFFICIENT_CLEARANCE' : !assigned && rank !== 'Supervisor' ? 'NOT_ASSIGNED' : null;
          if (expected) {
            expect(res.statusCode, label).toBe(403);
            expect(res.json().code, label).toBe(expected);
            await nothingWritten(report);
          } else {
            expect(res.statusCode, label).toBe(201);
          }
        }
      }
    }
  });
});

describe('POST /reports/<id>/investigation/begin and /end', () => {
  it('begin is the investigate action: status, timeline, event, queue row', async () => {
    const agent = await signedIn(t);
    const id = await makeReport({ status: 'Appealed', assigned_agent: agent.agent.chat_id });
    const res = await post(`/reports/${id}/investigation/begin`, agent.headers);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, report: { report_id: id, status: 'Under Investigation' } });
    expect(Object.keys(res.json()).sort()).toEqual(['report', 'success']);
    expect((await reportRow(id)).investigation_started_at).not.toBeNull();
    expect((await timeline(id)).map((e) => e.event)).toEqual(['Investigation started']);
    expect(await events(id)).toEqual([expect.objectContaining({ type: 'report.status_changed', before: { status: 'Appealed' }, after: { status: 'Under Investigation' } })]);
    expect(await queue(id)).toEqual([
      { kind: 'investigate', queue: 'operator', status: 'pending', payload: { reason: 'Investigation started', status_before: 'Appealed', status: 'Under Investigation' }, requested_by: agent.agent.chat_id },
    ]);
    const again = await post(`/reports/${id}/investigation/begin`, agent.headers);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual(STATUS_CHANGED);
    const other = await signedIn(t, { rank: 'Director', clearance: 5 });
    const notAssigned = await makeReport({ assigned_agent: agent.agent.chat_id });
    expect((await post(`/reports/${notAssigned}/investigation/begin`, other.headers)).statusCode).toBe(403);
    await nothingWritten(notAssigned);
  });

  it('end: Under Investigation to Pending, investigation_started_at cleared, no queue row', async () => {
    const agent = await signedIn(t);
    const id = await makeReport({ status: 'Under Investigation', assigned_agent: agent.agent.chat_id });
    const started = (await reportRow(id)).investigation_started_at;
    const res = await post(`/reports/${id}/investigation/end`, agent.headers);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, report: { status: 'Pending', investigation_started_at: null } });
    expect(await reportRow(id)).toMatchObject({ status: 'Pending', investigation_started_at: null });
    expect(await freshlyUpdated(id)).toBe(true);
    expect((await timeline(id)).map((e) => e.event)).toEqual(['Investigation concluded']);
    expect(await events(id)).toEqual([
      expect.objectContaining({
        type: 'report.status_changed',
        actor_chat_id: agent.agent.chat_id,
        before: { status: 'Under Investigation', investigation_started_at: started },
        after: { status: 'Pending', investigation_started_at: null },
        data: { action: 'conclude' },
      }),
    ]);
    expect(await queue(id)).toEqual([]);
  });

  it('end: 409 NO_INVESTIGATION outside an investigation, 403 for an agent not assigned', async () => {
    for (const status of ['Open', 'Pending', 'Appealed', 'Validated', 'Invalidated']) {
      const id = await makeReport({ status });
      const res = await post(`/reports/${id}/investigation/end`, key);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual(conflict('No investigation is in progress', 'NO_INVESTIGATION'));
      await nothingWritten(id);
    }
    const stranger = await signedIn(t, { rank: 'Director', clearance: 5 });
    const id = await makeReport({ status: 'Under Investigation' });
    expect((await post(`/reports/${id}/investigation/end`, stranger.headers)).statusCode).toBe(403);
    expect((await reportRow(id)).status).toBe('Under Investigation');
    await nothingWritten(id);
  });
});

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

describe('a failure part-way leaves nothing behind', () => {
  it.each([
    ['/action', { action: 'validate', reason: 'x' }],
    ['/action', { action: 'contact_reporter', reason: 'x' }],
    ['/investigation/begin', undefined],
    ['/investigation/end', undefined],
    ['/notes', { note: 'x' }],
    ['/evidence', { description: 'x', url: 'https://example.com' }],
    ['/timeline', { event: 'x' }],
  ])('%s %j', async (suffix, payload) => {
    const status = suffix === '/investigation/begin' ? 'Pending' : 'Under Investigation';
    const id = await makeReport({ prefix: 'FAIL', status });
    const before = await reportRow(id);
    const res = await post(`/reports/${id}${suffix}`, key, payload);
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toMatch(/^Database error: refused for the test/);
    expect(await reportRow(id)).toEqual(before);
    expect(await timeline(id)).toEqual([]);
    expect(await queue(id)).toEqual([]);
    for (const table of ['report_notes', 'report_evidence', 'contact_threads', 'contact_messages']) {
      expect(await q(`select 1 from ${table} where report_id = $1::text`, id), table).toEqual([]);
    }
  });
});
