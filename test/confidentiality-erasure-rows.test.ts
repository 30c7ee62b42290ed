// Issue 38, finding 5: the audit rows an erasure writes. The retention's admin.case_erased named a
// flagged case in its target with no report id, so GET /admin/audit and GET /audit showed it to a
// clearance-4 Senior Agent; a subject's export and erasure rows carry per-table counts that count
// the person's flagged reports. Now the erasure's event names its case where the visibility model
// looks (its report id), and below supervisor rank every subject export and erasure row is shown
// without its counts, alike, whatever the person's reports (hiding them only where a flagged report
// is counted would answer whether one is).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordAdminChangeBy } from '../src/admin/trail.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key, reportCrudHelpers, type Row } from './helpers/reports.js';

let t: TestApp;
let senior: Person;
let director: Person;
beforeAll(async () => {
  t = await createTestApp({ env: { RETENTION_DAYS: '30' }, retentionIntervalMs: 100 });
  senior = await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true });
  director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
}, 60_000);
afterAll(() => t.close());

const { createOk } = reportCrudHelpers(() => t);
const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Row>(sql, values)).rows;
const get = async (url: string, headers: Record<string, string>) => {
  const res = await t.app.inject({ url, headers });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.json();
};
const post = (url: string, headers: Record<string, string>, payload: object) => t.app.inject({ method: 'POST', url, headers, payload });

/** Resolves once `check` holds on what `read` answers (polled), or fails with what it last saw. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!check(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  expect(check(value), JSON.stringify(value).slice(0, 2000)).toBe(true);
  return value;
}

describe("the retention's erasure of a flagged case", () => {
  let flagged: string;
  let plain: string;
  beforeAll(async () => {
    // Filed by the bot, decided through the action route, then aged past RETENTION_DAYS.
    flagged = await createOk({ status: 'Pending', is_supervisor: true, reason: 'About a staff member' });
    plain = await createOk({ status: 'Pending' });
    for (const id of [flagged, plain]) expect((await post(`/reports/${id}/action`, key, { action: 'validate', reason: 'Proven' })).statusCode).toBe(200);
    await q(`update reports set updated_at = now() - interval '45 days' where report_id = any($1::text[])`, [[flagged, plain]]);
    await eventually(() => q('select report_id from case_erasures order by id'), (rows) => rows.length === 2);
  }, 60_000);

  it('writes its event naming the case by report id', async () => {
    const events = await q(`select report_id, is_supervisor, data ->> 'target' as target from events where type = 'admin.case_erased'`);
    expect(events).toHaveLength(2);
    expect(events).toEqual(
      expect.arrayContaining([
        { report_id: flagged, is_supervisor: true, target: flagged },
        { report_id: plain, is_supervisor: false, target: plain },
      ]),
    );
  });

  it('keeps its admin audit row from an allowlisted Senior Agent, in the rows and the totals', async () => {
    const all = await get('/admin/audit?limit=200', senior.headers);
    expect(JSON.stringify(all)).not.toContain(flagged);
    const erased = await get('/admin/audit?action=admin.case_erased', senior.headers);
    expect([erased.total, erased.rows.map((r: Row) => r.target)]).toEqual([1, [plain]]);
    expect(await get(`/admin/audit?target=${flagged}`, senior.headers)).toEqual({ success: true, total: 0, rows: [] });
  });

  it('keeps its event out of GET /audit for a Senior Agent, whatever the parameters', async () => {
    for (const query of ['', '?event=admin.case_erased', `?search=${flagged}`, `?report_id=${flagged}`, '?search=retention', '?supervisor=only']) {
      const body = await get(`/audit${query}`, senior.headers);
      expect(JSON.stringify(body), query).not.toContain(flagged);
    }
    const erased = await get('/audit?event=admin.case_erased', senior.headers);
    expect([erased.total, erased.events.map((e: Row) => e.report_id)]).toEqual([1, [plain]]);
  });

  it('shows it to supervisor rank and to the key', async () => {
    const rows = (await get('/admin/audit?action=admin.case_erased', director.headers)).rows;
    expect(rows.map((r: Row) => r.target).sort()).toEqual([flagged, plain].sort());
    for (const headers of [director.headers, key]) {
      const events = (await get(`/audit?report_id=${flagged}&event=admin.case_erased`, headers)).events;
      expect(events).toEqual([expect.objectContaining({ type: 'admin.case_erased', report_id: flagged, is_supervisor: true, after: expect.objectContaining({ counts: expect.any(Object) }) })]);
    }
  });
});

describe('a retention erasure recorded by 0.3.0', () => {
  it('is as hidden as its case, though its event names the case in its target only', async () => {
    // 0.3.0's eraseClosedCase wrote its trail so (sealed since: it keeps its null report id).
    const flagged = await createOk({ is_supervisor: true });
    await t.db.production.transaction((tx) =>
      recordAdminChangeBy(tx, { kind: 'system' }, `legacy-${flagged}`, {
        action: 'admin.case_erased', target: flagged, reason: 'Retention: closed more than 30 days ago (RETENTION_DAYS)',
        after: { erasure_id: 'case-0', reference: 'retention', closed_at: new Date().toISOString(), people: 2, counts: { reports: 1 } },
      }),
    );
    expect(await q('select report_id from events where correlation_id = $1::text', [`legacy-${flagged}`])).toEqual([{ report_id: null }]);
    for (const url of ['/admin/audit?limit=200', `/admin/audit?target=${flagged}`, '/audit?event=admin.case_erased', `/audit?search=${flagged}`]) {
      expect(JSON.stringify(await get(url, senior.headers)), url).not.toContain(flagged);
    }
    expect((await get(`/admin/audit?target=${flagged}`, director.headers)).rows).toEqual([expect.objectContaining({ action: 'admin.case_erased', target: flagged })]);
    for (const headers of [director.headers, key]) {
      const events = (await get('/audit?event=admin.case_erased', headers)).events.filter((e: Row) => e.correlation_id === `legacy-${flagged}`);
      expect(events).toEqual([expect.objectContaining({ report_id: null, is_supervisor: true })]);
    }
  });
});

describe("a subject's export and erasure rows", () => {
  // A party to a flagged report and one to none: the rows of both are shown alike.
  const party = chatId();
  const bystander = chatId();
  const reference = (person: string) => (person === party ? 'GDPR-party' : 'GDPR-bystander');
  const correlations: Record<string, string> = {};
  beforeAll(async () => {
    await createOk({ reporter: party, is_supervisor: true, reason: 'About a staff member' });
    await createOk({ reporter: party });
    await createOk({ reporter: bystander });
    for (const person of [party, bystander]) {
      const exported = await t.app.inject({ url: `/admin/subjects/${person}`, headers: director.headers });
      expect(exported.statusCode).toBe(200);
      expect(exported.json().kinds.reports_as_reporter).toHaveLength(person === party ? 2 : 1);
      const erased = await post(`/admin/subjects/${person}/erase`, director.headers, { reason: 'Deletion request', reference: reference(person) });
      expect(erased.statusCode).toBe(200);
      correlations[`export ${person}`] = exported.json().correlation_id;
      correlations[`erase ${person}`] = erased.json().correlation_id;
    }
  }, 60_000);

  const mine = (rows: Row[]) => rows.filter((r) => Object.values(correlations).includes(r.correlation_id));

  it('are written with their counts', async () => {
    const rows = await q(`select action, after from audit_log where correlation_id = any($1::text[]) order by id`, [Object.values(correlations)]);
    expect(rows.map((r) => r.action)).toEqual(['admin.subject_exported', 'admin.subject_erased', 'admin.subject_exported', 'admin.subject_erased']);
    expect(rows.map((r) => r.after.counts.reports_as_reporter ?? r.after.counts.reports)).toEqual([2, 2, 1, 1]);
    expect(rows.filter((r) => r.action === 'admin.subject_exported').map((r) => typeof r.after.total)).toEqual(['number', 'number']);
  });

  it('reach an allowlisted Senior Agent through GET /admin/audit without counts, every one of them', async () => {
    for (const action of ['admin.subject_exported', 'admin.subject_erased']) {
      const rows = mine((await get(`/admin/audit?action=${action}`, senior.headers)).rows);
      expect(rows, action).toHaveLength(2);
      for (const row of rows) {
        expect(row.after, action).not.toHaveProperty('counts');
        expect(row.after, action).not.toHaveProperty('total');
      }
      // What else the row says stays.
      if (action === 'admin.subject_erased') expect(rows.map((r: Row) => r.after.reference).sort()).toEqual(['GDPR-bystander', 'GDPR-party']);
    }
    const byDirector = mine((await get('/admin/audit?action=admin.subject_exported', director.headers)).rows);
    expect(byDirector.map((r: Row) => r.after.counts.reports_as_reporter).sort()).toEqual([1, 2]);
  });

  it('reach a Senior Agent through GET /audit without counts, and a search matches them only by what they show', async () => {
    const events = mine((await get('/audit?event=admin.subject', senior.headers)).events);
    expect(events).toHaveLength(4);
    for (const event of events) {
      expect(event.after, event.type).not.toHaveProperty('counts');
      expect(event.after, event.type).not.toHaveProperty('total');
    }
    for (const term of ['reports_as_reporter', 'counts', 'total']) {
      expect(mine((await get(`/audit?search=${term}&event=admin.subject`, senior.headers)).events), term).toEqual([]);
    }
    // By what they show, they are found.
    expect(mine((await get(`/audit?search=GDPR-bystander`, senior.headers)).events)).toHaveLength(1);
    for (const headers of [director.headers, key]) {
      const found = mine((await get('/audit?search=reports_as_reporter&event=admin.subject', headers)).events);
      expect(found.map((e: Row) => e.after.counts.reports_as_reporter).sort()).toEqual([1, 2]);
    }
  });
});
