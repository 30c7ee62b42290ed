// Reading reports (spec: Reports): GET /reports/<report_id>, the compatibility no-ops
// (viewed, evidence/opened) and the paginated GET /reports.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { key, reportCrudHelpers, type Row } from './helpers/reports.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const { base, timeline, events, createOk } = reportCrudHelpers(() => t);

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
