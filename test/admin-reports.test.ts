// Report search and correction for Directors (spec: GET /admin/reports, POST /admin/reports/<id>/correct).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { admin, expectAdminTrail, trailCounts } from './helpers/admin.js';
import type { Person } from './helpers/identity.js';

const refusal = (error: string, code: string) => ({ success: false, error, code });

describe('admin reports', () => {
  let t: TestApp;
  let director: Person;
  const search = (term: string, extra = '') =>
    t.app.inject({ method: 'GET', url: `/admin/reports?search=${encodeURIComponent(term)}${extra}`, headers: director.headers });
  const correct = (id: string, payload: unknown) => t.app.inject({ method: 'POST', url: `/admin/reports/${id}/correct`, headers: director.headers, payload: payload as object });
  const found = async (term: string) => (await search(term)).json().reports.map((r: { report_id: string }) => r.report_id);

  async function report(id: string, fields: { reporter?: string; reported?: string; reporter_name?: string | null; reason?: string; ago?: number; supervisor?: boolean } = {}) {
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, is_supervisor, created_at, updated_at)
       values ($1::text, $2::text, '300000000000000002', $3::text, '', '', $4::text, 'NightOwl_88', $5::boolean, now() - make_interval(secs => $6::int), now() - make_interval(secs => $6::int))`,
      [id, fields.reporter ?? '300000000000000001', fields.reason ?? 'Harassment', fields.reporter_name === undefined ? 'quietstorm' : fields.reporter_name, fields.supervisor ?? false, fields.ago ?? 0],
    );
  }

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    await report('ADM-100', { reason: 'Spamming 100% of the channels', ago: 50 });
    await report('ADM-101', { reason: 'Used a slur in voice_chat', reporter_name: 'BlueFalcon', ago: 40 });
    await report('ADM-102', { reason: "It's o'clock abuse", reporter: '300000000000000077', ago: 30, supervisor: true });
    await report('ADM_103', { reason: 'Backslash \\ in reason', ago: 20 });
  });
  afterAll(() => t.close());

  it('searches the id, the parties, their names and the reason, case-insensitively, newest first', async () => {
    expect(await found('adm-10')).toEqual(['ADM-102', 'ADM-101', 'ADM-100']);
    expect(await found('bluefalcon')).toEqual(['ADM-101']);
    expect(await found('300000000000000077')).toEqual(['ADM-102']);
    expect(await found('nightowl')).toHaveLength(4);
    const body = (await search('slur')).json();
    expect(body.reports[0]).toEqual({
      report_id: 'ADM-101', status: 'Open', reporter: '300000000000000001', reported: '300000000000000002', reporter_name: 'BlueFalcon',
      reported_name: 'NightOwl_88', reason: 'Used a slur in voice_chat', assigned_agent: null, is_supervisor: false,
      created_at: expect.stringMatching(/Z$/), updated_at: expect.stringMatching(/Z$/),
    });
  });

  it('treats the term as data: wildcards, quotes and backslashes match only themselves', async () => {
    expect(await found('%')).toEqual(['ADM-100']);
    expect(await found('m_1')).toEqual(['ADM_103']);
    expect(await found("o'clock")).toEqual(['ADM-102']);
    expect(await found('\\')).toEqual(['ADM_103']);
    expect(await found("' or '1'='1")).toEqual([]);
  });

  it('answers the newest reports without a term, at most 50, and refuses a term over 200 characters', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/admin/reports', headers: director.headers })).json().reports).toHaveLength(4);
    expect((await search('adm', '&limit=2')).json().reports).toHaveLength(2);
    expect((await search('x'.repeat(201))).json()).toEqual(refusal('querystring.search must NOT have more than 200 characters', 'VALIDATION_ERROR'));
    expect((await search('adm', '&limit=51')).json()).toEqual(refusal('querystring.limit must be <= 50', 'VALIDATION_ERROR'));
  });

  it('corrects whitelisted fields with before/after audited, a timeline row and updated_at bumped', async () => {
    const before = (await t.db.production.query<{ updated_at: string }>("select updated_at from reports where report_id = 'ADM-101'")).rows[0]!;
    const res = await correct('ADM-101', { fields: { reporter_name: 'BlueFalcon_', reason: 'Used a slur in voice chat' }, reason: 'Typos from the intake form' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.changed).toEqual(['reporter_name', 'reason']);
    expect(body.report).toMatchObject({ report_id: 'ADM-101', reporter_name: 'BlueFalcon_', reason: 'Used a slur in voice chat' });
    expect(Date.parse(body.report.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    const { audit, event } = await expectAdminTrail(t, body.correlation_id, { action: 'admin.report_corrected', actor: director.agent.chat_id, target: 'ADM-101', reason: 'Typos from the intake form' });
    expect(audit.before).toEqual({ reporter_name: 'BlueFalcon', reason: 'Used a slur in voice_chat' });
    expect(audit.after).toEqual({ reporter_name: 'BlueFalcon_', reason: 'Used a slur in voice chat' });
    expect(event.report_id).toBe('ADM-101');
    const timeline = (await t.db.production.query("select event, actor_chat_id from report_timeline where report_id = 'ADM-101'")).rows;
    expect(timeline).toEqual([{ event: 'Corrected by an administrator (reporter_name, reason): Typos from the intake form', actor_chat_id: director.agent.chat_id }]);
  });

  it('refuses fields outside the whitelist, a missing reason and unknown reports, writing nothing', async () => {
    const before = await trailCounts(t);
    expect((await correct('ADM-100', { fields: { status: 'Validated' }, reason: 'r' })).json()).toEqual(refusal('body.fields.status is not an accepted field', 'VALIDATION_ERROR'));
    expect((await correct('ADM-100', { fields: { reporter: '' }, reason: 'r' })).statusCode).toBe(400);
    expect((await correct('ADM-100', { fields: { reason: 'x' } })).json()).toEqual(refusal('body.reason is required', 'VALIDATION_ERROR'));
    const missing = await correct('NOPE-1', { fields: { reason: 'x' }, reason: 'r' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual(refusal('Report NOPE-1 not found', 'NOT_FOUND'));
    expect(await trailCounts(t)).toEqual(before);
    // Values already so: 200, nothing written.
    expect((await correct('ADM-100', { fields: { reporter_name: 'quietstorm' }, reason: 'r' })).json()).toMatchObject({ changed: [], correlation_id: null });
    expect(await trailCounts(t)).toEqual(before);
  });
});
