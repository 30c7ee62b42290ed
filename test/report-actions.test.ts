// Report actions: claim, investigate, validate, invalidate, contact_reporter (spec: Reports, "States and
// transitions" Report; targets in docs/decisions.md): state, timeline, events and queue rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { conflict, createReportTestApp, key, reportHelpers, STATUS_CHANGED, type Row } from './helpers/report-actions.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await createReportTestApp();
});
afterAll(() => t.close());

const { makeReport, q, reportRow, timeline, events, queue, freshlyUpdated, nothingWritten, post, act } = reportHelpers(() => t);

describe('POST /reports/<id>/action: claim', () => {
  it('assigns the signed-in agent, status unchanged, with timeline, event and queue row', async () => {
    const agent = await signedIn(t);
    const id = await makeReport();
    const res = await act(id, agent.headers, 'claim', 'Mine');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, action: 'claim', queued: true });
    expect(body.report).toMatchObject({ report_id: id, status: 'Open', assigned_agent: agent.agent.chat_id, assigned_agent_name: agent.agent.name });
    expect(body.report.timeline.map((e: Row) => e.event)).toEqual([`Claimed by ${agent.agent.name}`]);
    expect(await reportRow(id)).toMatchObject({ status: 'Open', assigned_agent: agent.agent.chat_id });
    expect(await freshlyUpdated(id)).toBe(true);
    expect(await timeline(id)).toEqual([{ event: `Claimed by ${agent.agent.name}`, actor_kind: 'agent', actor_chat_id: agent.agent.chat_id, actor_name: agent.agent.name }]);
    expect(await events(id)).toEqual([
      expect.objectContaining({
        type: 'report.assigned',
        actor_kind: 'agent',
        actor_chat_id: agent.agent.chat_id,
        before: { assigned_agent: null },
        after: { assigned_agent: agent.agent.chat_id },
        data: { action: 'claim', reason: 'Mine' },
        is_supervisor: false,
        correlation_id: res.headers['x-request-id'],
      }),
    ]);
    expect(await queue(id)).toEqual([
      {
        kind: 'claim',
        queue: 'operator',
        status: 'pending',
        payload: { reason: 'Mine', assigned_agent: agent.agent.chat_id, assigned_agent_name: agent.agent.name },
        requested_by: agent.agent.chat_id,
      },
    ]);
  });

  it('409 when already claimed, 409 when decided, 403 for the key: nothing written', async () => {
    const agent = await signedIn(t);
    const other = await signedIn(t);
    const claimed = await makeReport({ assigned_agent: other.agent.chat_id });
    const res = await act(claimed, agent.headers, 'claim');
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual(conflict('This case has already been claimed', 'ALREADY_CLAIMED'));
    await nothingWritten(claimed);
    expect((await reportRow(claimed)).assigned_agent).toBe(other.agent.chat_id);

    for (const status of ['Validated', 'Invalidated']) {
      const decided = await makeReport({ status });
      const res2 = await act(decided, agent.headers, 'claim');
      expect(res2.statusCode).toBe(409);
      expect(res2.json()).toEqual(STATUS_CHANGED);
      await nothingWritten(decided);
    }

    const open = await makeReport();
    const byKey = await act(open, key, 'claim');
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().code).toBe('SESSION_REQUIRED');
    await nothingWritten(open);
  });

  it('any status but a decided one may be claimed', async () => {
    for (const status of ['Open', 'Under Investigation', 'Pending', 'Appealed']) {
      const agent = await signedIn(t);
      const id = await makeReport({ status });
      expect((await act(id, agent.headers, 'claim')).statusCode, status).toBe(200);
    }
  });
});

describe('POST /reports/<id>/action: status moves', () => {
  it('investigate: Open to Under Investigation by the assigned agent, investigation_started_at set', async () => {
    const agent = await signedIn(t);
    const id = await makeReport({ assigned_agent: agent.agent.chat_id });
    const res = await act(id, agent.headers, 'investigate', 'Looking into it');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, action: 'investigate', queued: true, report: { status: 'Under Investigation' } });
    const row = await reportRow(id);
    expect(row.status).toBe('Under Investigation');
    expect(Date.now() - Date.parse(row.investigation_started_at)).toBeLessThan(60_000);
    expect((await timeline(id)).map((e) => e.event)).toEqual(['Investigation started: Looking into it']);
    expect(await events(id)).toEqual([
      expect.objectContaining({
        type: 'report.status_changed',
        before: { status: 'Open' },
        after: { status: 'Under Investigation' },
        data: { action: 'investigate', reason: 'Looking into it' },
      }),
    ]);
    expect(await queue(id)).toEqual([
      {
        kind: 'investigate',
        queue: 'operator',
        status: 'pending',
        payload: { reason: 'Looking into it', status_before: 'Open', status: 'Under Investigation' },
        requested_by: agent.agent.chat_id,
      },
    ]);
  });

  const moves: [string, string, string, string][] = [
    ['investigate', 'Pending', 'Under Investigation', 'Investigation started'],
    ['investigate', 'Appealed', 'Under Investigation', 'Investigation started'],
    ['validate', 'Under Investigation', 'Validated', 'Validated'],
    ['validate', 'Pending', 'Validated', 'Validated'],
    ['validate', 'Appealed', 'Validated', 'Validated'],
    ['invalidate', 'Under Investigation', 'Invalidated', 'Invalidated'],
    ['invalidate', 'Pending', 'Invalidated', 'Invalidated'],
    ['invalidate', 'Appealed', 'Invalidated', 'Invalidated'],
  ];
  it.each(moves)('%s moves %s to %s (the key, unassigned)', async (action, from, to, text) => {
    const id = await makeReport({ status: from });
    const res = await act(id, key, action, 'Decided');
    expect(res.statusCode).toBe(200);
    expect(res.json().report.status).toBe(to);
    const row = await reportRow(id);
    expect(row.status).toBe(to);
    expect(row.investigation_started_at === null).toBe(to !== 'Under Investigation');
    expect(await freshlyUpdated(id)).toBe(true);
    expect(await timeline(id)).toEqual([{ event: `${text}: Decided`, actor_kind: 'bot', actor_chat_id: null, actor_name: 'Automation bot' }]);
    expect(await events(id)).toEqual([
      expect.objectContaining({ type: 'report.status_changed', actor_kind: 'bot', before: { status: from }, after: { status: to } }),
    ]);
    expect(await queue(id)).toEqual([
      { kind: action, queue: 'operator', status: 'pending', payload: { reason: 'Decided', status_before: from, status: to }, requested_by: null },
    ]);
  });

  const refused: [string, string][] = [
    ['investigate', 'Under Investigation'],
    ['investigate', 'Validated'],
    ['investigate', 'Invalidated'],
    ['validate', 'Open'],
    ['validate', 'Validated'],
    ['validate', 'Invalidated'],
    ['invalidate', 'Open'],
    ['invalidate', 'Validated'],
    ['invalidate', 'Invalidated'],
  ];
  it.each(refused)('%s from %s is 409 STATUS_CHANGED with nothing written', async (action, from) => {
    const id = await makeReport({ status: from });
    const res = await act(id, key, action);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual(STATUS_CHANGED);
    expect((await reportRow(id)).status).toBe(from);
    await nothingWritten(id);
  });
});

describe('POST /reports/<id>/action: contact_reporter', () => {
  it('opens the thread with the reason as the first message; a second time is 409', async () => {
    const agent = await signedIn(t);
    const id = await makeReport({ status: 'Under Investigation', assigned_agent: agent.agent.chat_id });
    const res = await act(id, agent.headers, 'contact_reporter', 'Can you send the chat log?');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, action: 'contact_reporter', queued: true, report: { status: 'Under Investigation' } });
    expect(await q('select closed from contact_threads where report_id = $1::text', id)).toEqual([{ closed: false }]);
    const messages = await q('select id, direction, body, sender_chat_id, sender_name from contact_messages where report_id = $1::text', id);
    expect(messages).toEqual([
      { id: expect.any(Number), direction: 'to_reporter', body: 'Can you send the chat log?', sender_chat_id: agent.agent.chat_id, sender_name: agent.agent.name },
    ]);
    const messageId = messages[0]!.id;
    expect((await reportRow(id)).status).toBe('Under Investigation');
    expect(await freshlyUpdated(id)).toBe(true);
    expect((await timeline(id)).map((e) => e.event)).toEqual(['Reporter contacted']);
    expect(await events(id)).toEqual([
      expect.objectContaining({
        type: 'contact.message_added',
        actor_chat_id: agent.agent.chat_id,
        after: { message_id: messageId, direction: 'to_reporter', body: 'Can you send the chat log?' },
        data: { action: 'contact_reporter', message_id: messageId },
      }),
    ]);
    expect(await queue(id)).toEqual([
      {
        kind: 'contact_reporter',
        queue: 'operator',
        status: 'pending',
        payload: { reason: 'Can you send the chat log?', message_id: messageId, body: 'Can you send the chat log?', reporter: '300000000000000001', thread_id: null },
        requested_by: agent.agent.chat_id,
      },
    ]);

    const again = await act(id, agent.headers, 'contact_reporter', 'Hello again');
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual(conflict('A contact thread already exists for this case', 'DUPLICATE_CONTACT'));
    expect(await q('select body from contact_messages where report_id = $1::text', id)).toHaveLength(1);
    expect(await timeline(id)).toHaveLength(1);
    expect(await events(id)).toHaveLength(1);
    expect(await queue(id)).toHaveLength(1);
  });
});

describe('supervisor-flagged reports', () => {
  it('go to the supervisor queue, events flagged; sessions need supervisor rank', async () => {
    const id = await makeReport({ status: 'Pending', is_supervisor: true });
    expect((await act(id, key, 'validate')).statusCode).toBe(200);
    expect(await queue(id)).toEqual([expect.objectContaining({ kind: 'validate', queue: 'supervisor' })]);
    expect(await events(id)).toEqual([expect.objectContaining({ is_supervisor: true })]);

    const agent = await signedIn(t, { rank: 'Senior Agent', clearance: 5 });
    const flagged = await makeReport({ is_supervisor: true, assigned_agent: agent.agent.chat_id });
    for (const action of ['claim', 'investigate']) {
      const res = await act(flagged, agent.headers, action);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ success: false, error: 'Supervisor reports require supervisor rank', code: 'SUPERVISOR_ONLY' });
    }
    await nothingWritten(flagged);

    const supervisor = await signedIn(t, { rank: 'Supervisor' });
    const unclaimed = await makeReport({ is_supervisor: true });
    expect((await act(unclaimed, supervisor.headers, 'claim')).statusCode).toBe(200);
    expect((await act(unclaimed, supervisor.headers, 'investigate')).statusCode).toBe(200);
    expect((await queue(unclaimed)).map((r) => [r.kind, r.queue])).toEqual([
      ['claim', 'supervisor'],
      ['investigate', 'supervisor'],
    ]);
  });
});

describe('validation and unknown reports', () => {
  it.each([
    [{ action: 'escalate', reason: 'x' }, 'body.action must be one of: validate, invalidate, investigate, contact_reporter, claim'],
    [{ action: 'validate' }, 'body.reason is required'],
    [{ reason: 'x' }, 'body.action is required'],
    [{ action: 'validate', reason: '' }, 'body.reason must NOT have fewer than 1 characters'],
    [{ action: 'validate', reason: 'x'.repeat(501) }, 'body.reason must NOT have more than 500 characters'],
    [{ action: 'validate', reason: 5 }, 'body.reason must be string'],
    [{ action: 'validate', reason: 'x', extra: 1 }, 'body.extra is not an accepted field'],
  ])('action 400 for %j', async (payload, error) => {
    const id = await makeReport({ status: 'Pending' });
    const res = await post(`/reports/${id}/action`, key, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
    await nothingWritten(id);
  });

  it.each([
    ['/action', { action: 'validate', reason: 'x' }],
    ['/investigation/begin', undefined],
    ['/investigation/end', undefined],
    ['/notes', { note: 'x' }],
    ['/evidence', { description: 'x', url: 'https://example.com/a' }],
    ['/timeline', { event: 'x' }],
  ])('POST /reports/<unknown>%s is 404', async (suffix, payload) => {
    const res = await post(`/reports/NOPE-${process.pid}${suffix}`, key, payload);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ success: false, error: `Report NOPE-${process.pid} not found`, code: 'NOT_FOUND' });
  });

  it('a report id longer than 64 characters is 400', async () => {
    const res = await act('x'.repeat(65), key, 'validate');
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('params.report_id must NOT have more than 64 characters');
  });
});

describe.runIf(onPostgres)('concurrent actions on one report (PostgreSQL only)', () => {
  it('two agents claiming at once: one wins, one 409, one queue row, one timeline entry', async () => {
    const [a, b] = await Promise.all([signedIn(t), signedIn(t)]);
    const id = await makeReport();
    const results = await Promise.all([act(id, a.headers, 'claim'), act(id, b.headers, 'claim')]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const loser = results.find((r) => r.statusCode === 409)!;
    expect(loser.json()).toEqual(conflict('This case has already been claimed', 'ALREADY_CLAIMED'));
    const winner = results.findIndex((r) => r.statusCode === 200) === 0 ? a : b;
    expect((await reportRow(id)).assigned_agent).toBe(winner.agent.chat_id);
    expect(await queue(id)).toEqual([expect.objectContaining({ kind: 'claim', requested_by: winner.agent.chat_id })]);
    expect(await timeline(id)).toHaveLength(1);
    expect(await events(id)).toHaveLength(1);
  });

  it('two investigate actions at once by the assigned agent: one 200, one 409 STATUS_CHANGED', async () => {
    const agent = await signedIn(t);
    const id = await makeReport({ assigned_agent: agent.agent.chat_id });
    const results = await Promise.all([act(id, agent.headers, 'investigate'), act(id, agent.headers, 'investigate')]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(results.find((r) => r.statusCode === 409)!.json()).toEqual(STATUS_CHANGED);
    expect(await queue(id)).toEqual([expect.objectContaining({ kind: 'investigate' })]);
    expect(await timeline(id)).toHaveLength(1);
    expect(await events(id)).toHaveLength(1);
  });
});
