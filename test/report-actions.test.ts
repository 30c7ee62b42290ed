// Report actions, investigations, notes, evidence and timeline entries (spec: Reports, "States and
// transitions" Report; targets in docs/decisions.md): state, timeline, events and queue rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refuseInserts } from './helpers/failures.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  // A mid-transaction failure on demand: reports whose id starts with FAIL- cannot get a queue
  // row or an event, after the earlier writes of their transaction have gone through.
  await refuseInserts(t.db.production, 'refuse_fail_reports', `new.report_id like 'FAIL-%'`, ['report_actions', 'events']);
});
afterAll(() => t.close());

type Row = Record<string, any>;
let seq = 0;

interface ReportSeed {
  prefix?: string;
  status?: string;
  assigned_agent?: string | null;
  is_supervisor?: boolean;
}

/** A report written straight into the store, last updated an hour ago. */
async function makeReport(seed: ReportSeed = {}): Promise<string> {
  const id = `${seed.prefix ?? 'RA'}-${process.pid}-${++seq}`;
  const status = seed.status ?? 'Open';
  await t.db.production.query(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence, status, assigned_agent, is_supervisor,
       investigation_started_at, created_at, updated_at)
     values ($1::text, '300000000000000001', '300000000000000002', 'Harassment', '', '', $2::text, $3::text, $4::boolean,
       case when $2::text = 'Under Investigation' then now() - interval '1 hour' end, now() - interval '1 hour', now() - interval '1 hour')`,
    [id, status, seed.assigned_agent ?? null, seed.is_supervisor ?? false],
  );
  return id;
}

const q = async (sql: string, id: string) => (await t.db.production.query(sql, [id])).rows as Row[];
const reportRow = async (id: string) => (await q('select * from reports where report_id = $1::text', id))[0]!;
const timeline = (id: string) => q('select event, actor_kind, actor_chat_id, actor_name from report_timeline where report_id = $1::text order by id', id);
const events = (id: string) =>
  q('select type, actor_kind, actor_chat_id, before, after, data, is_supervisor, correlation_id from events where report_id = $1::text order by id', id);
const queue = (id: string) => q('select kind, queue, status, payload, requested_by from report_actions where report_id = $1::text order by action_id', id);
const freshlyUpdated = async (id: string) => Date.now() - Date.parse((await reportRow(id)).updated_at) < 60_000;

async function nothingWritten(id: string) {
  expect(await timeline(id)).toEqual([]);
  expect(await events(id)).toEqual([]);
  expect(await queue(id)).toEqual([]);
  expect(await freshlyUpdated(id)).toBe(false);
}

const post = (url: string, headers: Record<string, string>, payload?: unknown) =>
  t.app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
const act = (id: string, headers: Record<string, string>, action: string, reason = 'Because') => post(`/reports/${id}/action`, headers, { action, reason });
const conflict = (error: string, code: string) => ({ success: false, error, code });
const STATUS_CHANGED = conflict('This action can no longer be performed because the case status changed', 'STATUS_CHANGED');

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
