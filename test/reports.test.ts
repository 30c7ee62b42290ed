// Report CRUD (spec: Reports): creation (JSON and form), the lists, reading, updating, deleting,
// the compatibility no-ops and chat profiles, with every gate and the rows each change writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person, type PersonOptions } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

let n = 0;
const newId = () => `R-${process.pid}-${++n}`;
const base = (report_id = newId()) => ({ report_id, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' });
type Row = Record<string, any>;

const rows = async (sql: string, id: string) => (await t.db.production.query(sql, [id])).rows as Row[];
// Undefined when there is no such report (typed as a row for brevity).
const reportRow = async (id: string) => (await rows('select * from reports where report_id = $1::text', id))[0] as Row;
const timeline = (id: string) => rows('select event, actor_kind, actor_chat_id from report_timeline where report_id = $1::text order by id', id);
const events = (id: string) => rows('select type, actor_kind, actor_chat_id, before, after, data, correlation_id, is_supervisor from events where report_id = $1::text order by id', id);
const evidence = (id: string) => rows('select description, url, submitted_by from report_evidence where report_id = $1::text order by id', id);

async function create(overrides: Row = {}, headers: Record<string, string> = key) {
  const payload = { ...base(), ...overrides };
  const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers, payload });
  return { res, id: payload.report_id as string };
}
async function createOk(overrides: Row = {}) {
  const { res, id } = await create(overrides);
  expect(res.statusCode).toBe(201);
  return id;
}
const patch = (id: string, payload: object, headers: Record<string, string> = key) =>
  t.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers, payload });
const del = (id: string, payload: object | undefined, headers: Record<string, string> = key) =>
  t.app.inject({ method: 'DELETE', url: `/reports/${id}`, headers, ...(payload ? { payload } : {}) });

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

function seedReportBody(reportId: string, reporter: string) {
  return { report_id: reportId, reporter, reported: chatId(), reason: 'Payload check', notes: 'n', evidence: 'e' };
}

describe('authorization matrix', () => {
  const person = (options: PersonOptions) => signedIn(t, options);
  const statusOf = async (send: (h: Record<string, string>) => Promise<{ statusCode: number }>, h: Record<string, string>) => (await send(h)).statusCode;

  it('create: 401 without credentials, key ok, sessions from clearance 2 (manage_dockets)', async () => {
    const send = (h: Record<string, string>) => t.app.inject({ method: 'POST', url: '/reports/create', headers: h, payload: base() });
    expect(await statusOf(send, {})).toBe(401);
    expect(await statusOf(send, { authorization: 'wrong' })).toBe(401);
    expect(await statusOf(send, key)).toBe(201);
    for (let clearance = 1; clearance <= 5; clearance++) {
      expect(await statusOf(send, (await person({ clearance })).headers), `clearance ${clearance}`).toBe(clearance >= 2 ? 201 : 403);
    }
  });

  it('get: view_dashboard from clearance 1; flagged reports need supervisor rank; the key sees all', async () => {
    const open = await createOk();
    const flagged = await createOk({ is_supervisor: true });
    const get = (id: string) => (h: Record<string, string>) => t.app.inject({ url: `/reports/${id}`, headers: h });
    expect(await statusOf(get(open), {})).toBe(401);
    expect(await statusOf(get(flagged), key)).toBe(200);
    expect(await statusOf(get(open), (await person({ clearance: null })).headers)).toBe(403);
    for (let clearance = 1; clearance <= 5; clearance++) {
      expect(await statusOf(get(open), (await person({ clearance })).headers)).toBe(200);
      const agent = await person({ clearance, rank: 'Senior Agent' });
      const res = await get(flagged)(agent.headers);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ success: false, error: 'Supervisor reports require supervisor rank', code: 'SUPERVISOR_ONLY' });
      expect(await statusOf(get(flagged), (await person({ clearance, rank: 'Supervisor' })).headers)).toBe(200);
    }
  });

  it('update: manage_dockets, the assigned agent only, supervisor rank on flagged reports, reassign_docket to reassign', async () => {
    const check = async (who: Person | 'key' | 'none', options: Row, body: Row, expected: number, code?: string) => {
      const assignee = who === 'key' || who === 'none' ? undefined : who.agent.chat_id;
      const id = await createOk({ ...(options.assigned === false || !assignee ? {} : { assigned_agent: assignee }), is_supervisor: options.flagged ?? false });
      const headers = who === 'key' ? key : who === 'none' ? {} : who.headers;
      const res = await patch(id, body, headers);
      expect(res.statusCode, JSON.stringify({ options, body, res: res.json() })).toBe(expected);
      if (code) expect(res.json().code).toBe(code);
      if (expected !== 200) expect(await timeline(id)).toHaveLength(1);
    };
    await check('none', {}, { status: 'Pending' }, 401);
    await check('key', {}, { status: 'Pending' }, 200);
    await check(await person({ clearance: 1 }), {}, { status: 'Pending' }, 403, 'INSUFFICIENT_CLEARANCE');
    for (let clearance = 2; clearance <= 5; clearance++) {
      await check(await person({ clearance }), {}, { status: 'Pending' }, 200);
      await check(await person({ clearance, rank: 'Director' }), { assigned: false }, { status: 'Pending' }, 403, 'NOT_ASSIGNED');
      await check(await person({ clearance, rank: 'Senior Agent' }), { flagged: true }, { status: 'Pending' }, 403, 'SUPERVISOR_ONLY');
      await check(await person({ clearance, rank: 'Supervisor' }), { flagged: true }, { status: 'Pending' }, 200);
      // reassign_docket: clearance 3 and Head Investigator rank.
      const reassign = { assigned_agent: chatId() };
      await check(await person({ clearance, rank: 'Supervisor' }), {}, reassign, 403, 'INSUFFICIENT_CLEARANCE');
      await check(await person({ clearance, rank: 'Head Investigator' }), { assigned: false }, reassign, clearance >= 3 ? 200 : 403);
    }
  });

  it('delete: delete_docket (clearance 5) for sessions; flagged reports need supervisor rank', async () => {
    for (let clearance = 1; clearance <= 5; clearance++) {
      const id = await createOk();
      expect(await statusOf((h) => del(id, { reason: 'r' }, h), (await person({ clearance })).headers)).toBe(clearance === 5 ? 200 : 403);
    }
    const id = await createOk({ is_supervisor: true });
    expect(await statusOf((h) => del(id, { reason: 'r' }, h), {})).toBe(401);
    expect(await statusOf((h) => del(id, { reason: 'r' }, h), (await person({ clearance: 5, rank: 'Senior Agent' })).headers)).toBe(403);
    expect(await statusOf((h) => del(id, { reason: 'r' }, h), (await person({ clearance: 5, rank: 'Supervisor' })).headers)).toBe(200);
    const other = await createOk();
    expect(await statusOf((h) => del(other, { reason: 'r' }, h), key)).toBe(200);
  });
});

describe('GET /reports/<report_id>', () => {
  it('the full report: notes, evidence, timeline, chat profiles, resolved assignee name; 404 unknown', async () => {
    const agent = await signedIn(t, { name: 'Ada Assignee' });
    const payload = base();
    await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { ...payload, assigned_agent: agent.agent.chat_id, evidence_url: 'https://e.test/x' } });
    await t.app.inject({ method: 'POST', url: `/reports/${payload.report_id}/chat-profiles`, headers: key, payload: { reporter: { chat_id: payload.reporter, username: 'rep' } } });
    const res = await t.app.inject({ url: `/reports/${payload.report_id}`, headers: agent.headers });
    expect(res.statusCode).toBe(200);
    expect(res.json().report).toMatchObject({
      report_id: payload.report_id, assigned_agent: agent.agent.chat_id, assigned_agent_name: 'Ada Assignee', notes_list: [],
      evidence_list: [expect.objectContaining({ url: 'https://e.test/x', submitted_by_id: null })],
      timeline: [expect.objectContaining({ event: 'Report created' })],
      chat_profiles: [expect.objectContaining({ chat_id: payload.reporter, username: 'rep', profile: { chat_id: payload.reporter, username: 'rep' } })],
    });
    const missing = await t.app.inject({ url: '/reports/NOPE-1', headers: key });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ success: false, error: 'Report NOPE-1 not found', code: 'NOT_FOUND' });
  });
});

describe('PATCH /reports/<report_id>/update', () => {
  const investigating = (id: string) =>
    t.db.production.query(`update reports set status = 'Under Investigation', investigation_started_at = now() where report_id = $1::text`, [id]);

  it('a status change by the assigned agent: updated_at bump, timeline, report.status_changed with before and after', async () => {
    const agent = await signedIn(t);
    const id = await createOk({ assigned_agent: agent.agent.chat_id });
    const before = await reportRow(id);
    const res = await patch(id, { status: 'Pending', reporter: before.reporter }, agent.headers);
    expect(res.statusCode).toBe(200);
    expect(res.json().report).toMatchObject({ report_id: id, status: 'Pending' });
    const after = await reportRow(id);
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    expect((await timeline(id)).at(-1)).toEqual({ event: 'Status changed from Open to Pending', actor_kind: 'agent', actor_chat_id: agent.agent.chat_id });
    expect((await events(id)).slice(1)).toEqual([
      expect.objectContaining({ type: 'report.status_changed', actor_chat_id: agent.agent.chat_id, before: { status: 'Open' }, after: { status: 'Pending' } }),
    ]);
  });

  it('an assignment change is report.assigned, even with a status change beside it: one event, one timeline row', async () => {
    const head = await signedIn(t, { name: 'Nell New' });
    const id = await createOk();
    const res = await patch(id, { assigned_agent: head.agent.chat_id, status: 'Appealed' });
    expect(res.statusCode).toBe(200);
    expect(res.json().report).toMatchObject({ assigned_agent: head.agent.chat_id, assigned_agent_name: 'Nell New', status: 'Appealed' });
    expect((await timeline(id)).slice(1)).toEqual([{ event: 'Assigned to Nell New; Status changed from Open to Appealed', actor_kind: 'bot', actor_chat_id: null }]);
    expect((await events(id)).slice(1)).toEqual([
      expect.objectContaining({ type: 'report.assigned', before: { assigned_agent: null, status: 'Open' }, after: { assigned_agent: head.agent.chat_id, status: 'Appealed' } }),
    ]);
    await patch(id, { assigned_agent: null });
    expect((await timeline(id)).at(-1)!.event).toBe('Unassigned');
  });

  it('other fields are report.updated; is_supervisor, notes and reason are the bot\'s only', async () => {
    const id = await createOk();
    const res = await patch(id, { notes: 'Bot notes', reason: 'Spam', is_supervisor: true, reported: 'someone' });
    expect(res.statusCode).toBe(200);
    expect(await reportRow(id)).toMatchObject({ notes: 'Bot notes', reason: 'Spam', is_supervisor: true, reported: 'someone' });
    const last = (await events(id)).at(-1)!;
    expect(last).toMatchObject({ type: 'report.updated', is_supervisor: true, after: { notes: 'Bot notes', reason: 'Spam', is_supervisor: true, reported: 'someone' } });
    expect((await timeline(id)).at(-1)!.event).toBe('Updated notes, reason, is_supervisor, reported');
    const supervisor = await signedIn(t, { rank: 'Director', clearance: 5 });
    const mine = await createOk({ assigned_agent: supervisor.agent.chat_id });
    for (const field of ['is_supervisor', 'notes', 'reason']) {
      const denied = await patch(mine, { [field]: field === 'is_supervisor' ? true : 'x' }, supervisor.headers);
      expect(denied.statusCode).toBe(403);
      expect(denied.json()).toEqual({ success: false, error: `body.${field} may be changed by the bot only`, code: 'BOT_ONLY_FIELD' });
    }
    expect(await timeline(mine)).toHaveLength(1);
  });

  it('Pending concludes an investigation; any other status during one is 409 with nothing written', async () => {
    const id = await createOk({ status: 'Under Investigation' });
    expect((await reportRow(id)).investigation_started_at).not.toBeNull();
    const refused = await patch(id, { status: 'Appealed' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({ success: false, error: 'This action can no longer be performed because the case status changed', code: 'CONFLICT' });
    expect(await timeline(id)).toHaveLength(1);
    const res = await patch(id, { status: 'Pending' });
    expect(res.statusCode).toBe(200);
    expect(await reportRow(id)).toMatchObject({ status: 'Pending', investigation_started_at: null });
    expect((await timeline(id)).at(-1)!.event).toBe('Investigation concluded: status changed from Under Investigation to Pending');
    expect((await events(id)).at(-1)).toMatchObject({ type: 'report.status_changed', before: { status: 'Under Investigation' }, after: { status: 'Pending', investigation_started_at: null } });
  });

  it('a body equal to the current values is 200 and writes nothing', async () => {
    const id = await createOk();
    const row = await reportRow(id);
    const res = await patch(id, { status: 'Open', reporter: row.reporter, is_supervisor: false });
    expect(res.statusCode).toBe(200);
    expect(await reportRow(id)).toEqual(row);
    expect(await timeline(id)).toHaveLength(1);
    expect(await events(id)).toHaveLength(1);
  });

  it.each([
    [{}, 'body has no field to update'],
    [{ status: 'Validated' }, 'body.status must be one of: Open, Pending, Appealed'],
    [{ status: 'Under Investigation' }, 'body.status must be one of: Open, Pending, Appealed'],
    [{ evidence: 'x' }, 'body.evidence is not an accepted field'],
    [{ assigned_agent: 'abc' }, 'body.assigned_agent must match pattern "^[0-9]{1,20}$"'],
    [{ reporter: '' }, 'body.reporter must NOT have fewer than 1 characters'],
  ])('400 for %j', async (payload, error) => {
    const id = await createOk();
    const res = await patch(id, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
    expect(await timeline(id)).toHaveLength(1);
  });

  it('404 for an unknown report', async () => {
    const res = await patch('NOPE-2', { status: 'Open' });
    expect(res.json()).toEqual({ success: false, error: 'Report NOPE-2 not found', code: 'NOT_FOUND' });
  });

  it.runIf(onPostgres)('concurrent updates serialise on the row lock: one consistent state, one timeline row per change (PostgreSQL only)', async () => {
    // Two identical conclusions: the second sees Pending and is a no-op.
    const id = await createOk();
    await investigating(id);
    const supervisor = await signedIn(t, { rank: 'Supervisor' });
    await t.db.production.query('update reports set assigned_agent = $2::text where report_id = $1::text', [id, supervisor.agent.chat_id]);
    const same = await Promise.all([patch(id, { status: 'Pending' }), patch(id, { status: 'Pending' }, supervisor.headers)]);
    expect(same.map((r) => r.statusCode)).toEqual([200, 200]);
    expect((await timeline(id)).slice(1)).toEqual([expect.objectContaining({ event: 'Investigation concluded: status changed from Under Investigation to Pending' })]);
    expect((await events(id)).filter((e) => e.type === 'report.status_changed')).toHaveLength(1);
    // Two different statuses from the bot: whichever order, every success is one row and the last wins.
    for (let round = 0; round < 5; round++) {
      const race = await createOk();
      const results = await Promise.all([patch(race, { status: 'Pending' }), patch(race, { status: 'Appealed' })]);
      expect(results.map((r) => r.statusCode)).toEqual([200, 200]);
      const changes = (await events(race)).filter((e) => e.type === 'report.status_changed');
      expect(changes).toHaveLength(2);
      expect(changes[1]!.before.status).toBe(changes[0]!.after.status);
      expect((await timeline(race)).slice(1)).toHaveLength(2);
      expect((await reportRow(race)).status).toBe(changes[1]!.after.status);
    }
  });
});

describe('DELETE /reports/<report_id>', () => {
  it('captures the pre-image, removes the working data, keeps timeline and events, writes the forensic row', async () => {
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    const id = await createOk({ evidence_url: 'https://e.test/1', assigned_agent: director.agent.chat_id });
    const db = t.db.production;
    await db.query(`insert into report_notes (report_id, note, author_kind) values ($1::text, 'a note', 'bot')`, [id]);
    await db.query(`insert into contact_threads (report_id) values ($1::text)`, [id]);
    await db.query(`insert into contact_messages (report_id, direction, body) values ($1::text, 'to_reporter', 'hi')`, [id]);
    await db.query(`insert into report_actions (report_id, kind, queue) values ($1::text, 'claim', 'operator')`, [id]);
    const res = await del(id, { reason: 'Duplicate of another docket' }, { ...director.headers, 'x-request-id': `del-${id}` });
    expect(res.statusCode).toBe(200);
    const { deleted } = res.json();
    expect(res.json()).toEqual({ success: true, deleted: { report_id: id, deleted_at: expect.any(String) } });
    expect(await reportRow(id)).toBeUndefined();
    for (const table of ['report_notes', 'report_evidence', 'contact_threads', 'contact_messages', 'report_actions']) {
      expect(await rows(`select 1 from ${table} where report_id = $1::text`, id), table).toEqual([]);
    }
    expect(await timeline(id)).toEqual([
      expect.objectContaining({ event: 'Report created' }),
      { event: 'Report deleted: Duplicate of another docket', actor_kind: 'agent', actor_chat_id: director.agent.chat_id },
    ]);
    const evs = await events(id);
    expect(evs.map((e) => e.type)).toEqual(['report.created', 'report.deleted']);
    expect(evs[1]).toMatchObject({
      correlation_id: `del-${id}`, data: { reason: 'Duplicate of another docket' }, after: null,
      before: expect.objectContaining({ report_id: id, notes_list: [expect.objectContaining({ note: 'a note' })], evidence_list: [expect.objectContaining({ url: 'https://e.test/1' })] }),
    });
    const [forensic] = await rows('select * from deleted_reports where report_id = $1::text', id);
    expect(forensic).toMatchObject({
      reason: 'Duplicate of another docket', deleted_by_kind: 'agent', deleted_by_chat_id: director.agent.chat_id, correlation_id: `del-${id}`,
      pre_image: expect.objectContaining({ report_id: id, assigned_agent: director.agent.chat_id }),
    });
    expect(new Date(forensic!.deleted_at).toISOString()).toBe(deleted.deleted_at);
    expect((await del(id, { reason: 'again' })).statusCode).toBe(404);
  });

  it.each([
    [undefined, 'body.reason is required'],
    [{}, 'body.reason is required'],
    [{ reason: '' }, 'body.reason must NOT have fewer than 1 characters'],
    [{ reason: 'x'.repeat(501) }, 'body.reason must NOT have more than 500 characters'],
    [{ reason: 'ok', extra: 1 }, 'body.extra is not an accepted field'],
  ])('400 for %j from the key too, nothing deleted', async (payload, error) => {
    const id = await createOk();
    const res = await del(id, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
    expect(await reportRow(id)).toBeDefined();
    expect(await rows('select 1 from deleted_reports where report_id = $1::text', id)).toEqual([]);
  });

  it('404 for an unknown report', async () => {
    const res = await del('NOPE-3', { reason: 'r' });
    expect(res.json()).toEqual({ success: false, error: 'Report NOPE-3 not found', code: 'NOT_FOUND' });
  });
});

describe('compatibility no-ops', () => {
  it.each(['viewed', 'evidence/opened'])('POST /reports/<id>/%s: 200 for any id, view_dashboard, nothing written', async (path) => {
    const id = await createOk();
    const viewer = await signedIn(t, { clearance: 1 });
    for (const target of [id, 'NOPE-4']) {
      const res = await t.app.inject({ method: 'POST', url: `/reports/${target}/${path}`, headers: viewer.headers });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true });
    }
    expect((await t.app.inject({ method: 'POST', url: `/reports/${id}/${path}`, headers: key })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: `/reports/${id}/${path}` })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: `/reports/${id}/${path}`, headers: (await signedIn(t, { clearance: null })).headers })).statusCode).toBe(403);
    expect(await timeline(id)).toHaveLength(1);
    expect(await events(id)).toHaveLength(1);
  });
});

describe('POST /reports/<report_id>/chat-profiles', () => {
  const deliver = (id: string, payload: object, headers: Record<string, string> = key) =>
    t.app.inject({ method: 'POST', url: `/reports/${id}/chat-profiles`, headers, payload });
  const profile = (id: string) => rows('select chat_id, username, global_name, avatar, profile from chat_profiles where chat_id = $1::text', id);

  it('upserts the profiles by chat id, known fields in columns and the whole object in profile', async () => {
    const payload = base();
    const id = await createOk(payload);
    const reporter = { chat_id: payload.reporter, username: 'rep', global_name: 'Rep Orter', avatar: 'a1', banner: 'b' };
    const res = await deliver(id, { reporter, reportee: { chat_id: payload.reported, username: 'bad' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().stored).toEqual([
      expect.objectContaining({ chat_id: payload.reporter, username: 'rep', profile: reporter }),
      expect.objectContaining({ chat_id: payload.reported, username: 'bad', global_name: null }),
    ]);
    expect(await profile(payload.reporter)).toEqual([{ chat_id: payload.reporter, username: 'rep', global_name: 'Rep Orter', avatar: 'a1', profile: reporter }]);
    // A later delivery replaces the snapshot; `reported` is the same party as `reportee`.
    const again = await deliver(id, { reported: { chat_id: payload.reported, username: 'renamed' }, reportee: { chat_id: payload.reported, username: 'renamed' } });
    expect(again.json().stored).toEqual([expect.objectContaining({ chat_id: payload.reported, username: 'renamed' })]);
    expect(await profile(payload.reported)).toEqual([expect.objectContaining({ username: 'renamed' })]);
    const full = (await t.app.inject({ url: `/reports/${id}`, headers: key })).json().report;
    expect(full.chat_profiles.map((p: Row) => p.chat_id).sort()).toEqual([payload.reporter, payload.reported].sort());
  });

  it('key only; 404 unknown report; 400 bad profiles', async () => {
    const id = await createOk();
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    expect((await deliver(id, { reporter: { chat_id: '1' } }, director.headers)).statusCode).toBe(403);
    const missing = await deliver('NOPE-5', { reporter: { chat_id: '1' } });
    expect(missing.json()).toEqual({ success: false, error: 'Report NOPE-5 not found', code: 'NOT_FOUND' });
    for (const [payload, error] of [
      [{}, 'body needs reporter, reportee or reported'],
      [{ reporter: { chat_id: 'abc' } }, 'body.reporter.chat_id must match pattern "^[0-9]{1,20}$"'],
      [{ reporter: { username: 'x' } }, 'body.reporter.chat_id is required'],
      [{ reportee: { chat_id: '1' }, reported: { chat_id: '2' } }, 'body.reportee and body.reported are the same party and must name the same chat_id'],
      [{ witness: { chat_id: '1' } }, 'body.witness is not an accepted field'],
    ] as const) {
      const res = await deliver(id, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect(await profile('1')).toEqual([]);
  });
});

describe('GET /reports', () => {
  // A database of its own, so totals and counts are exact.
  let l: TestApp;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    l = await createTestApp();
    // o1..o5 operator, s1..s3 supervisor-flagged; created one minute apart, o1 oldest; s3 updated last.
    const plan: [string, string, boolean][] = [
      ['o1', 'Open', false], ['s1', 'Pending', true], ['o2', 'Pending', false], ['o3', 'Appealed', false],
      ['s2', 'Open', true], ['o4', 'Open', false], ['s3', 'Validated', true], ['o5', 'Under Investigation', false],
    ];
    for (const [i, [name, status, flagged]] of plan.entries()) {
      ids[name] = `L-${name}`;
      await l.db.production.query(
        `insert into reports (report_id, reporter, reported, reason, notes, evidence, status, is_supervisor, created_at, updated_at)
         values ($1::text, 'a', 'b', 'r', '', '', $2::text, $3::boolean, timestamptz '2026-01-01' + $4::integer * interval '1 minute',
                 timestamptz '2026-01-01' + $4::integer * interval '1 minute')`,
        [`L-${name}`, status, flagged, i],
      );
    }
    await l.db.production.query(`update reports set updated_at = '2026-02-01' where report_id = 'L-s3'`);
    await l.db.production.query(`update reports set updated_at = '2026-01-31' where report_id = 'L-o1'`);
    await l.db.production.query(`insert into contact_threads (report_id, closed) values ('L-o2', false), ('L-s2', false), ('L-o3', true)`);
  });
  afterAll(() => l.close());

  const list = async (query: string, headers: Record<string, string> = key) => {
    const res = await l.app.inject({ url: `/reports${query}`, headers });
    return { status: res.statusCode, body: res.json() };
  };
  const names = (reports: Row[]) => reports.map((r) => r.report_id.slice(2));

  it('without limit: the whole list, newest first, optionally by status', async () => {
    const { body } = await list('');
    expect(Object.keys(body).sort()).toEqual(['reports', 'success']);
    expect(names(body.reports)).toEqual(['o5', 's3', 'o4', 's2', 'o3', 'o2', 's1', 'o1']);
    expect(body.reports[0]).toMatchObject({ reporter: 'a', status: 'Under Investigation', is_supervisor: false });
    expect(names((await list('?status=Open')).body.reports)).toEqual(['o4', 's2', 'o1']);
    expect((await list('?status=Closed')).status).toBe(400);
    expect((await list('?offset=2')).body.error).toBe('querystring.limit is required with querystring.offset');
  });

  it('with limit: a page, the total, per-type counts; filters and sorts', async () => {
    const first = (await list('?limit=3')).body;
    expect(first).toMatchObject({ success: true, total: 8, offset: 0, limit: 3, counts: { operator: 5, supervisor: 3 } });
    expect(names(first.reports)).toEqual(['o5', 's3', 'o4']);
    expect(names((await list('?limit=3&offset=6')).body.reports)).toEqual(['s1', 'o1']);
    expect((await list('?limit=3&offset=50')).body).toMatchObject({ reports: [], total: 8 });
    const operators = (await list('?limit=10&type=operator')).body;
    expect(operators).toMatchObject({ total: 5, counts: { operator: 5, supervisor: 3 } });
    expect(names(operators.reports)).toEqual(['o5', 'o4', 'o3', 'o2', 'o1']);
    expect(names((await list('?limit=10&type=supervisor&sort=oldest')).body.reports)).toEqual(['s1', 's2', 's3']);
    const statuses = (await list('?limit=10&statuses=Open,Pending')).body;
    expect(statuses).toMatchObject({ total: 5, counts: { operator: 3, supervisor: 2 } });
    expect(names(statuses.reports)).toEqual(['o4', 's2', 'o2', 's1', 'o1']);
    expect(names((await list('?limit=10&statuses=Open,Pending&status=Open')).body.reports)).toEqual(['o4', 's2', 'o1']);
    expect(names((await list('?limit=10&contact_open=true')).body.reports)).toEqual(['s2', 'o2']);
    expect((await list('?limit=10&contact_open=false')).body).toMatchObject({ total: 6, counts: { operator: 4, supervisor: 2 } });
    expect(names((await list('?limit=3&sort=updated')).body.reports)).toEqual(['s3', 'o1', 'o5']);
  });

  it.each([
    ['?limit=0', 'querystring.limit must be >= 1'],
    ['?limit=201', 'querystring.limit must be <= 200'],
    ['?limit=5&offset=-1', 'querystring.offset must be >= 0'],
    ['?limit=5&statuses=Open,Closed', 'querystring.statuses: "Closed" is not a report status (one of: Open, Under Investigation, Pending, Appealed, Validated, Invalidated)'],
    ['?limit=5&type=admin', 'querystring.type must be one of: operator, supervisor'],
    ['?limit=5&sort=random', 'querystring.sort must be one of: newest, oldest, updated'],
    ['?limit=5&contact_open=maybe', 'querystring.contact_open must be boolean'],
    ['?limit=5&page=2', 'querystring.page is not an accepted field'],
  ])('400 for %s', async (query, error) => {
    expect(await list(query)).toEqual({ status: 400, body: { success: false, error, code: 'VALIDATION_ERROR' } });
  });

  it('callers below supervisor rank get placeholders for flagged reports and a zero supervisor count', async () => {
    const agent = await signedIn(l, { clearance: 1, rank: 'Senior Agent' });
    const page = (await list('?limit=4', agent.headers)).body;
    expect(page).toMatchObject({ total: 8, counts: { operator: 5, supervisor: 0 } });
    expect(page.reports[1]).toEqual({ report_id: 'L-s3', is_supervisor: true, restricted: true, status: 'Validated', created_at: expect.any(String), updated_at: '2026-02-01T00:00:00.000Z' });
    expect(page.reports[0]).toMatchObject({ report_id: 'L-o5', reporter: 'a' });
    const legacy = (await list('', agent.headers)).body.reports as Row[];
    expect(legacy.filter((r) => r.is_supervisor).every((r) => r.restricted === true && r.reporter === undefined)).toBe(true);
    const supervisor = await signedIn(l, { clearance: 1, rank: 'Supervisor' });
    const full = (await list('?limit=4', supervisor.headers)).body;
    expect(full.counts).toEqual({ operator: 5, supervisor: 3 });
    expect(full.reports[1]).toMatchObject({ report_id: 'L-s3', reporter: 'a' });
    expect(full.reports[1].restricted).toBeUndefined();
    expect((await list('?limit=4', (await signedIn(l, { clearance: null })).headers)).status).toBe(403);
    expect((await list('?limit=4', {})).status).toBe(401);
  });
});

describe('the list totals kept by triggers', () => {
  it('match a count of the rows after creates, updates, contact threads opening and closing, and deletes', async () => {
    for (let i = 0; i < 6; i++) {
      await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { ...seedReportBody(`COUNT-${i}`, chatId()), is_supervisor: i % 3 === 0 } });
    }
    await t.db.production.query(`update reports set status = 'Pending' where report_id in ('COUNT-1', 'COUNT-2')`);
    await t.db.production.query(`update reports set is_supervisor = true where report_id = 'COUNT-4'`);
    await t.db.production.query(`insert into contact_threads (report_id) values ('COUNT-1'), ('COUNT-3')`);
    await t.db.production.query(`update contact_threads set closed = true where report_id = 'COUNT-3'`);
    await t.app.inject({ method: 'DELETE', url: '/reports/COUNT-5', headers: key, payload: { reason: 'Duplicate of COUNT-4' } });
    await t.app.inject({ method: 'DELETE', url: '/reports/COUNT-1', headers: key, payload: { reason: 'Filed by mistake' } });

    const counted = await t.db.production.query(
      `select status, is_supervisor, contact_open, sum(n)::int as n from report_counts
       group by status, is_supervisor, contact_open having sum(n) <> 0 order by 1, 2, 3`,
    );
    const actual = await t.db.production.query(
      `select status, is_supervisor, contact_open, count(*)::int as n from reports group by 1, 2, 3 order by 1, 2, 3`,
    );
    expect(counted.rows).toEqual(actual.rows);
    expect((await t.db.production.query(`select contact_open from reports where report_id = 'COUNT-3'`)).rows).toEqual([{ contact_open: false }]);
  });
});

const countsMatchRows = async () => {
  const counted = await t.db.production.query(
    `select status, is_supervisor, contact_open, sum(n)::int as n from report_counts
     group by status, is_supervisor, contact_open having sum(n) <> 0 order by 1, 2, 3`,
  );
  const actual = await t.db.production.query(`select status, is_supervisor, contact_open, count(*)::int as n from reports group by 1, 2, 3 order by 1, 2, 3`);
  expect(counted.rows).toEqual(actual.rows);
};

describe('the list totals kept per statement', () => {
  const bulk = (prefix: string, n: number) =>
    t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, status, is_supervisor)
       select $1::text || g, '1', '2', 'Bulk', '', '', (array['Open', 'Pending', 'Validated'])[1 + g % 3], g % 5 = 0
       from generate_series(1, $2::int) as g`,
      [prefix, n],
    );

  it('count a statement of many rows once per group it changes, and net out an update that changes no group', async () => {
    const [{ before }] = (await t.db.production.query<{ before: number }>('select count(*)::int as before from report_counts')).rows as [{ before: number }];
    await bulk('BULK-', 600);
    // Six groups at most (three statuses, two types), each counter row touched once: never a row per report.
    const [{ after }] = (await t.db.production.query<{ after: number }>('select count(*)::int as after from report_counts')).rows as [{ after: number }];
    expect(after - before).toBeLessThanOrEqual(6);
    await countsMatchRows();
    const rowsBefore = (await t.db.production.query('select * from report_counts order by 1, 2, 3, 4')).rows;
    await t.db.production.query(`update reports set notes = 'touched' where report_id like 'BULK-%'`);
    // Swapping two groups' members one for one changes no total.
    await t.db.production.query(
      `update reports set status = case status when 'Open' then 'Pending' else 'Open' end
       where report_id in (
         (select report_id from reports where report_id like 'BULK-%' and status = 'Open' and not is_supervisor order by report_id limit 1),
         (select report_id from reports where report_id like 'BULK-%' and status = 'Pending' and not is_supervisor order by report_id limit 1))`,
    );
    expect((await t.db.production.query('select * from report_counts order by 1, 2, 3, 4')).rows).toEqual(rowsBefore);
    await t.db.production.query(`update reports set status = 'Appealed', is_supervisor = not is_supervisor where report_id like 'BULK-%' and status = 'Validated'`);
    await countsMatchRows();
    await t.db.production.query(`delete from reports where report_id like 'BULK-%' and status <> 'Open'`);
    await countsMatchRows();
  });
});

describe.runIf(onPostgres)('the list totals under concurrent writes (PostgreSQL only)', () => {
  it('stay equal to a count of the rows when creations, status changes and deletions race', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `RACE-COUNT-${i}`);
    const created = await Promise.all(
      ids.map((id, i) => t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { ...seedReportBody(id, chatId()), is_supervisor: i % 4 === 0 } })),
    );
    expect(created.map((r) => r.statusCode)).toEqual(ids.map(() => 201));
    const churn = await Promise.all([
      ...ids.slice(0, 15).map((id) => t.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: key, payload: { status: 'Pending' } })),
      ...ids.slice(10, 25).map((id) => t.app.inject({ method: 'DELETE', url: `/reports/${id}`, headers: key, payload: { reason: 'Race cleanup' } })),
    ]);
    // Deleting a report someone is updating may win or lose the race; every answer is a clean one.
    for (const res of churn) expect([200, 404]).toContain(res.statusCode);
    const counted = await t.db.production.query(
      `select status, is_supervisor, contact_open, sum(n)::int as n from report_counts
       group by status, is_supervisor, contact_open having sum(n) <> 0 order by 1, 2, 3`,
    );
    const actual = await t.db.production.query(`select status, is_supervisor, contact_open, count(*)::int as n from reports group by 1, 2, 3 order by 1, 2, 3`);
    expect(counted.rows).toEqual(actual.rows);
  });

  it('stay equal to a count of the rows when statements of many rows race on other connections', async () => {
    const db = t.db.production;
    await Promise.all(
      [0, 1, 2, 3].map((k) =>
        db.query(
          `insert into reports (report_id, reporter, reported, reason, notes, evidence, status, is_supervisor)
           select 'RACE-BULK-' || $1::int || '-' || g, '1', '2', 'Bulk', '', '', (array['Open', 'Pending'])[1 + g % 2], g % 3 = 0
           from generate_series(1, 300) as g`,
          [k],
        ),
      ),
    );
    await Promise.all([
      db.query(`update reports set status = 'Validated' where report_id like 'RACE-BULK-0-%' or report_id like 'RACE-BULK-1-%'`),
      db.query(`update reports set is_supervisor = not is_supervisor where report_id like 'RACE-BULK-1-%' or report_id like 'RACE-BULK-2-%'`),
      db.query(`delete from reports where report_id like 'RACE-BULK-3-%' and status = 'Open'`),
      db.query(`insert into contact_threads (report_id) select report_id from reports where report_id like 'RACE-BULK-2-%'`),
    ]);
    await countsMatchRows();
  });
});
