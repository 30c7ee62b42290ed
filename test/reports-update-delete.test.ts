// PATCH /reports/<report_id>/update and DELETE /reports/<report_id> (spec: Reports): the events,
// timeline rows and forensic row each writes, their refusals, and updates racing on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const { rows, reportRow, timeline, events, createOk, patch, del } = reportCrudHelpers(() => t);

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
