// GET /audit (spec: Audit log): the canonical events searched, filtered, sorted and paged in SQL,
// a readable scrubbed line each, and supervisor events hidden below supervisor rank.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { indexProbe, searchEvents, type AuditFilter } from '../src/audit/queries.js';
import type { Queryable } from '../src/platform/db/types.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let agent: Person;
let supervisor: Person;

const A = '300000000000000001';
const D = '300000000000000004';
// label, type, actor_kind, chat id, name, report, supervisor, before, after, data
const SEED: [string, string, string, string | null, string | null, string | null, boolean, unknown, unknown, unknown][] = [
  ['e1', 'report.created', 'agent', A, 'Alice', 'SVC-CASE-00001', false, null, { status: 'Open' }, null],
  ['e2', 'report.status_changed', 'agent', '300000000000000002', 'Bob', 'SVC-CASE-00002', false, { status: 'Open' }, { status: 'Pending' }, null],
  ['e3', 'contact.message_added', 'bot', null, null, 'SVC-CASE-00001', false, null, null, { message_id: 1, direction: 'to_reporter' }],
  ['e4', 'report.status_changed', 'agent', '300000000000000003', 'Carol', 'SVC-CASE-00003', true, { status: 'Pending' }, { status: 'Validated' }, null],
  ['e5', 'queue.action_completed', 'system', null, null, null, false, null, null, { action_id: 5 }],
  ['e6', 'report.assigned', 'agent', D, null, 'SVC-CASE-00002', false, { assigned_agent: null }, { assigned_agent: '300000000000000002' }, null],
  ['e7', 'report.timeline_entry_added', 'agent', A, 'Alice', 'SVC-CASE-00001', false, null, { event: '100% done \\ ok' }, null],
  ['e8', 'contact.thread_closed', 'agent', '300000000000000003', 'Carol', 'SVC-CASE-00003', true, { closed: false }, { closed: true }, null],
];

beforeAll(async () => {
  t = await createTestApp();
  agent = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
  // Whether an event is a supervisor event is its report's flag now (issue 28), not the column the
  // seed also sets: SVC-CASE-00003 is flagged, the others are not.
  for (const [report, flagged] of [['SVC-CASE-00001', false], ['SVC-CASE-00002', false], ['SVC-CASE-00003', true]] as const) {
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, is_supervisor) values ($1, '300000000000000011', '300000000000000012', 'r', 'n', 'e', $2)`,
      [report, flagged],
    );
  }
  for (const [i, [label, type, kind, chat, name, report, sup, before, after, data]] of SEED.entries()) {
    await t.db.production.query(
      `insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, is_supervisor, before, after, data, correlation_id, created_at)
       values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9::jsonb, $10, timestamptz '2026-01-01T00:00:00Z' + make_interval(secs => $11))`,
      [type, kind, chat, name, report, sup, JSON.stringify(before), JSON.stringify(after), JSON.stringify(data), label, i],
    );
  }
});
afterAll(() => t.close());

async function audit(query: string, headers: Record<string, string> = key) {
  const res = await t.app.inject({ url: `/audit${query}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  return { ...body, labels: (body.events as { correlation_id: string }[]).map((e) => e.correlation_id) };
}

describe('GET /audit', () => {
  it('all events newest first, every field, a readable text', async () => {
    const body = await audit('');
    expect(body).toMatchObject({ success: true, total: 8, offset: 0, limit: 100 });
    expect(body.labels).toEqual(['e8', 'e7', 'e6', 'e5', 'e4', 'e3', 'e2', 'e1']);
    expect(body.events[6]).toEqual({
      id: expect.any(Number), type: 'report.status_changed', actor_kind: 'agent', actor_chat_id: '300000000000000002', actor_name: 'Bob',
      report_id: 'SVC-CASE-00002', before: { status: 'Open' }, after: { status: 'Pending' }, data: null, correlation_id: 'e2',
      is_supervisor: false, created_at: '2026-01-01T00:00:01.000Z', text: 'Bob changed report SVC-CASE-00002 status from Open to Pending',
    });
    const text = Object.fromEntries(body.events.map((e: { correlation_id: string; text: string }) => [e.correlation_id, e.text]));
    expect(text).toEqual({
      e1: 'Alice created report SVC-CASE-00001',
      e2: 'Bob changed report SVC-CASE-00002 status from Open to Pending',
      e3: 'Automation bot messaged the reporter on report SVC-CASE-00001',
      e4: 'Carol changed report SVC-CASE-00003 status from Pending to Validated',
      e5: 'System: queue action completed',
      e6: 'Agent [id] assigned report SVC-CASE-00002 to [id]',
      e7: 'Alice added a timeline entry to report SVC-CASE-00001',
      e8: 'Carol closed the contact thread on report SVC-CASE-00003',
    });
    expect(body.events.every((e: { text: string }) => !/\d{15,20}/.test(e.text))).toBe(true);
  });

  it.each([
    ['newest', ['e8', 'e7', 'e6', 'e5', 'e4', 'e3', 'e2', 'e1']],
    ['oldest', ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7', 'e8']],
    ['event', ['e3', 'e8', 'e5', 'e6', 'e1', 'e4', 'e2', 'e7']],
    ['by', ['e7', 'e1', 'e2', 'e8', 'e4', 'e6', 'e5', 'e3']],
    ['report', ['e7', 'e3', 'e1', 'e6', 'e2', 'e8', 'e4', 'e5']],
  ])('sort=%s', async (sort, labels) => {
    expect((await audit(`?sort=${sort}`)).labels).toEqual(labels);
  });

  it.each([
    ['?search=pending', ['e4', 'e2']],
    ['?search=ALICE', ['e7', 'e1']],
    ['?search=svc-case-00003', ['e8', 'e4']],
    ['?search=100%25', ['e7']],
    ['?search=%25', ['e7']],
    ['?search=%5C', ['e7']],
    ['?search=_', ['e8', 'e7', 'e6', 'e5', 'e4', 'e3', 'e2']],
    ['?search=nothing-like-this', []],
    ['?event=report.,contact.', ['e8', 'e7', 'e6', 'e4', 'e3', 'e2', 'e1']],
    ['?event=STATUS', ['e4', 'e2']],
    ['?event=queue.', ['e5']],
    ['?event=%20queue.%20,,', ['e5']],
    ['?report_id=SVC-CASE-00001', ['e7', 'e3', 'e1']],
    ['?report_id=SVC-CASE-00001&event=contact.', ['e3']],
    ['?search=pending&sort=oldest', ['e2', 'e4']],
    ['?supervisor=only', ['e8', 'e4']],
    ['?supervisor=exclude', ['e7', 'e6', 'e5', 'e3', 'e2', 'e1']],
  ])('filter %s', async (query, labels) => {
    const body = await audit(query);
    expect(body.labels).toEqual(labels);
    expect(body.total).toBe(labels.length);
  });

  it('pages: total counts every match, limit and offset cut the page', async () => {
    expect(await audit('?limit=3')).toMatchObject({ total: 8, offset: 0, limit: 3, labels: ['e8', 'e7', 'e6'] });
    expect(await audit('?limit=3&offset=6')).toMatchObject({ total: 8, offset: 6, limit: 3, labels: ['e2', 'e1'] });
    expect(await audit('?limit=3&offset=10')).toMatchObject({ total: 8, offset: 10, labels: [] });
    expect(await audit('?limit=1&offset=1&sort=report&search=alice')).toMatchObject({ total: 2, labels: ['e1'] });
  });

  it('below supervisor rank supervisor events never show, whatever the parameters', async () => {
    expect(await audit('', agent.headers)).toMatchObject({ total: 6, labels: ['e7', 'e6', 'e5', 'e3', 'e2', 'e1'] });
    expect(await audit('?supervisor=only', agent.headers)).toMatchObject({ total: 0, labels: [] });
    expect(await audit('?search=carol', agent.headers)).toMatchObject({ total: 0, labels: [] });
    expect(await audit('?report_id=SVC-CASE-00003', agent.headers)).toMatchObject({ total: 0, labels: [] });
    expect(await audit('?search=pending&sort=event', agent.headers)).toMatchObject({ total: 1, labels: ['e2'] });
    expect(await audit('?supervisor=only', supervisor.headers)).toMatchObject({ total: 2, labels: ['e8', 'e4'] });
    expect(await audit('', supervisor.headers)).toMatchObject({ total: 8 });
  });

  it('401 without credentials, 403 below clearance 4', async () => {
    expect((await t.app.inject({ url: '/audit' })).statusCode).toBe(401);
    const low = await signedIn(t, { rank: 'Director', clearance: 3 });
    expect((await t.app.inject({ url: '/audit', headers: low.headers })).json()).toMatchObject({ code: 'INSUFFICIENT_CLEARANCE' });
  });

  it.each([
    ['?limit=501', 'querystring.limit must be <= 500'],
    ['?limit=0', 'querystring.limit must be >= 1'],
    ['?limit=ten', 'querystring.limit must be integer'],
    ['?offset=-1', 'querystring.offset must be >= 0'],
    ['?sort=random', 'querystring.sort must be one of: newest, oldest, event, by, report'],
    ['?supervisor=maybe', 'querystring.supervisor must be one of: only, exclude'],
    [`?search=${'x'.repeat(201)}`, 'querystring.search must NOT have more than 200 characters'],
    ['?actor=me', 'querystring.actor is not an accepted field'],
  ])('400 for %s', async (query, error) => {
    const res = await t.app.inject({ url: `/audit${query}`, headers: key });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
  });
});

describe('GET /audit at volume: case ids and the counted total', () => {
  const insert = (sql: string, values: unknown[] = []) => t.db.production.query(sql, values);

  it("a report's exact id, in any letter case, lists that report's events; an id that has no events is searched as text", async () => {
    await insert(
      `insert into events (type, actor_kind, report_id, data, correlation_id, created_at) values
         ('report.created', 'system', 'CASE-Mixed-7', null, 'm1', timestamptz '2026-02-01T00:00:00Z'),
         ('report.note_added', 'system', 'CASE-Mixed-7', null, 'm2', timestamptz '2026-02-01T00:00:01Z'),
         ('report.note_added', 'system', 'CASE-Mixed-70', null, 'm3', timestamptz '2026-02-01T00:00:02Z'),
         ('report.note_added', 'system', 'SVC-CASE-00001', '{"see": "CASE-Mixed-7"}', 'm4', timestamptz '2026-02-01T00:00:03Z')`,
    );
    // The id as stored: its own two events, not the longer id nor another report's mention of it.
    expect(await audit('?search=CASE-Mixed-7')).toMatchObject({ total: 2, total_capped: false, labels: ['m2', 'm1'] });
    // Typed in lower case, it is not the stored id in either form: the substring search finds all four.
    expect(await audit('?search=case-mixed-7')).toMatchObject({ total: 4, labels: ['m4', 'm3', 'm2', 'm1'] });
    // Case ids are upper case: typed in lower case, they still name the report.
    expect(await audit('?search=svc-case-00001&sort=oldest')).toMatchObject({ total: 4, labels: ['e1', 'e3', 'e7', 'm4'] });
    // Other filters still apply to a case id.
    expect(await audit('?search=SVC-CASE-00001&event=contact.')).toMatchObject({ total: 1, labels: ['e3'] });
    expect(await audit('?search=SVC-CASE-00003', agent.headers)).toMatchObject({ total: 0, labels: [] });
  });

  it('a phrase is looked up by its rarest-looking word and matched whole', async () => {
    expect(['footage batch 4217', 'footage batch 42', 'status pending', 'morgan hale', 'pending', 'a b', 'x1 report'].map(indexProbe)).toEqual(['4217', 'footage', 'pending', 'morgan', 'pending', 'a b', 'x1 report']);
    await insert(
      `insert into events (type, actor_kind, report_id, after, correlation_id, created_at) values
         ('report.updated', 'system', 'PHRASE-1', '{"note": "checked Footage Batch 4217"}', 'p1', timestamptz '2026-02-02T00:00:00Z'),
         ('report.updated', 'system', 'PHRASE-2', '{"note": "footage batch 42"}', 'p2', timestamptz '2026-02-02T00:00:01Z'),
         ('report.updated', 'system', 'PHRASE-3', '{"note": "batch 42 of the footage"}', 'p3', timestamptz '2026-02-02T00:00:02Z'),
         ('report.updated', 'system', 'PHRASE-4', '{"note": "footage_batch 42%"}', 'p4', timestamptz '2026-02-02T00:00:03Z')`,
    );
    expect(await audit('?search=footage%20batch%2042')).toMatchObject({ total: 2, labels: ['p2', 'p1'] });
    expect(await audit('?search=FOOTAGE%20BATCH%20421')).toMatchObject({ total: 1, labels: ['p1'] });
    expect(await audit('?search=footage_batch%2042%25')).toMatchObject({ total: 1, labels: ['p4'] });
    expect(await audit('?search=batch%2042%20of%20footage')).toMatchObject({ total: 0, labels: [] });
  });

  it('counts matches up to 1,000 and says when there were more', async () => {
    await insert(
      `insert into events (type, actor_kind, report_id, correlation_id, created_at)
       select 'report.updated', 'system', 'CAP-' || g, 'cap-' || g, timestamptz '2026-03-01T00:00:00Z' + make_interval(secs => g)
       from generate_series(1, 1000) as g`,
    );
    expect(await audit('?search=cap-&limit=2')).toMatchObject({ total: 1000, total_capped: false, labels: ['cap-1000', 'cap-999'] });
    await insert(`insert into events (type, actor_kind, report_id, correlation_id) values ('report.updated', 'system', 'CAP-X', 'cap-x')`);
    const body = await audit('?search=cap-&limit=2&offset=1000');
    expect(body).toMatchObject({ total: 1000, total_capped: true, offset: 1000, labels: ['cap-1'] });
    expect(await audit('?search=CAP-X')).toMatchObject({ total: 1, total_capped: false, labels: ['cap-x'] });
  });

  it('counts in a second statement only when the page cannot tell the total', async () => {
    const statements: string[] = [];
    const db: Queryable = {
      query: (text, values, options) => {
        statements.push(/count\(\*\)/.test(text) ? 'count' : 'page');
        return t.db.production.query(text, values, options);
      },
      exec: (sql) => t.db.production.exec(sql),
    };
    const search = async (term: string, limit: number, offset: number) => {
      statements.length = 0;
      const filter: AuditFilter = { search: term, events: [], principal: { kind: 'key' }, sort: 'newest', limit, offset };
      const { total, totalCapped, events } = await searchEvents(db, filter);
      return { total, totalCapped, ids: events.map((e) => e.correlation_id), statements: [...statements] };
    };
    // cap-1 … cap-1000 and cap-x from the test above: 1,001 matches of "cap-"; "cap-99" matches cap-99 and cap-990 … cap-999.
    expect(await search('cap-99', 50, 0)).toEqual({ total: 11, totalCapped: false, ids: ['cap-999', 'cap-998', 'cap-997', 'cap-996', 'cap-995', 'cap-994', 'cap-993', 'cap-992', 'cap-991', 'cap-990', 'cap-99'], statements: ['page'] });
    expect(await search('cap-99', 4, 8)).toEqual({ total: 11, totalCapped: false, ids: ['cap-991', 'cap-990', 'cap-99'], statements: ['page'] });
    expect(await search('no such words anywhere', 50, 0)).toEqual({ total: 0, totalCapped: false, ids: [], statements: ['page'] });
    // A full page, or an empty one past the start, cannot tell: counted.
    expect(await search('cap-99', 11, 0)).toMatchObject({ total: 11, statements: ['page', 'count'] });
    expect(await search('cap-99', 5, 20)).toEqual({ total: 11, totalCapped: false, ids: [], statements: ['page', 'count'] });
    expect(await search('cap-', 2, 0)).toMatchObject({ total: 1000, totalCapped: true, statements: ['page', 'count'] });
    // The last page past the cap ends the matches: its total is over the cap, capped.
    expect(await search('cap-', 2, 1000)).toEqual({ total: 1000, totalCapped: true, ids: ['cap-1'], statements: ['page'] });
  });
});

describe('GET /audit below supervisor rank: the page of a search that hides rows', () => {
  it('pages exactly as a filter over everything would, however many of the newest matches are hidden', async () => {
    // 40 newest matches about a flagged report, then 30 visible ones, interleaved with 10 more flagged.
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, is_supervisor) values ('HIDE-F', '1', '2', 'r', 'n', 'e', true), ('HIDE-V', '1', '2', 'r', 'n', 'e', false)`,
    );
    const rows: [string, string, number][] = [];
    for (let i = 0; i < 80; i++) {
      const flagged = i >= 40 || i % 3 === 0;
      rows.push([`hidepage-${i}`, flagged ? 'HIDE-F' : 'HIDE-V', i]);
    }
    await t.db.production.query(
      `insert into events (type, actor_kind, report_id, correlation_id, data, created_at)
       select 'report.timeline_entry_added', 'system', x.report, x.label, jsonb_build_object('note', 'hidepage marker'),
              timestamptz '2026-03-01T00:00:00Z' + make_interval(secs => x.n)
       from jsonb_to_recordset($1::jsonb) as x(label text, report text, n int)`,
      [JSON.stringify(rows.map(([label, report, n]) => ({ label, report, n })))],
    );
    const everything = (await audit('?search=hidepage&limit=500', supervisor.headers)).events as { correlation_id: string; report_id: string }[];
    expect(everything).toHaveLength(80);
    const visible = everything.filter((e) => e.report_id === 'HIDE-V').map((e) => e.correlation_id);
    expect(visible).toHaveLength(26);
    for (const [limit, offset] of [[10, 0], [5, 5], [20, 10], [7, 21], [100, 0], [3, 25], [10, 26], [10, 40]] as const) {
      const page = await audit(`?search=hidepage&limit=${limit}&offset=${offset}`, agent.headers);
      expect(page.labels, `limit ${limit} offset ${offset}`).toEqual(visible.slice(offset, offset + limit));
      expect(page.total, `limit ${limit} offset ${offset}`).toBe(26);
      expect(page.events.every((e: { is_supervisor: boolean }) => e.is_supervisor === false)).toBe(true);
    }
    // A supervisor excluding supervisor events gets the same pages.
    const excluded = await audit('?search=hidepage&limit=7&offset=21&supervisor=exclude', supervisor.headers);
    expect(excluded.labels).toEqual(visible.slice(21, 28));
  });

  it('counts exactly up to the cap however the hidden rows lie among the first matches', async () => {
    // Volume (2,600 events) planted as the other volume tests are; the reports through SQL alike.
    // The count takes the first matches in the scan's order (the insertion order here) and probes
    // them: 1,300 hidden rows first leave it no 1,001 visible among them, so it counts again over
    // everything; "count-b" rows are few enough to be every match of their own term.
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, is_supervisor) values ('COUNT-F', '1', '2', 'r', 'n', 'e', true), ('COUNT-V', '1', '2', 'r', 'n', 'e', false)`,
    );
    await t.db.production.query(
      `insert into events (type, actor_kind, report_id, correlation_id, data, created_at)
       select 'report.timeline_entry_added', 'system', case when g <= 1300 then 'COUNT-F' else 'COUNT-V' end,
              case when g % 2 = 0 then 'count-a-' else 'count-b-' end || g,
              jsonb_build_object('note', 'countmark ' || case when g % 2 = 0 then 'count-a-' else 'count-b-' end || g || '.'),
              timestamptz '2026-04-01T00:00:00Z' + make_interval(secs => g)
       from generate_series(1, 2600) as g`,
    );
    // 1,300 visible ("count-a" and "count-b" rows of COUNT-V): over the cap, though the first
    // 1,272 matches in the scan are all hidden.
    expect(await audit('?search=countmark&limit=5', agent.headers)).toMatchObject({ total: 1000, total_capped: true, labels: ['count-a-2600', 'count-b-2599', 'count-a-2598', 'count-b-2597', 'count-a-2596'] });
    expect(await audit('?search=countmark&limit=5', supervisor.headers)).toMatchObject({ total: 1000, total_capped: true });
    // "count-b-1" matches 1, 10 to 19, 100 to 199 and 1,000 to 1,999 (odd ones; the note is
    // "countmark count-b-<n>."): hidden up to 1,300.
    const odd = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i).filter((n) => n % 2 === 1);
    const visibleB = odd(1301, 1999).length;
    expect(await audit('?search=count-b-1&limit=3', agent.headers)).toMatchObject({ total: visibleB, total_capped: false, labels: ['count-b-1999', 'count-b-1997', 'count-b-1995'] });
    expect((await audit('?search=count-b-1&limit=3', supervisor.headers)).total).toBe([1, ...odd(10, 19), ...odd(100, 199), ...odd(1000, 1999)].length);
    // Past the page's end: counted, with nothing to show.
    expect(await audit(`?search=count-b-1&limit=3&offset=${visibleB}`, agent.headers)).toMatchObject({ total: visibleB, labels: [] });
  });
});

describe('GET /audit for those who see every report: the flag each event is shown with', () => {
  it("is its reports' flag now: the report's own, a punishment's former report's, a deleted report's, by text or by case id (issue 38)", async () => {
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, is_supervisor) values
         ('FLAGNOW-A', '1', '2', 'r', 'n', 'e', false), ('FLAGNOW-B', '1', '2', 'r', 'n', 'e', true)`,
    );
    await t.db.production.query(
      `insert into deleted_reports (report_id, pre_image, reason, deleted_by_kind, correlation_id)
       values ('FLAGNOW-C', '{"report_id": "FLAGNOW-C", "is_supervisor": true}', 'gone', 'bot', 'flagnow-delete')`,
    );
    // The rows' own column says the opposite each time: it is history, never shown.
    await t.db.production.query(
      `insert into events (type, actor_kind, report_id, is_supervisor, before, correlation_id, created_at) values
         ('report.updated', 'system', 'FLAGNOW-A', true, null, 'flagnow-1', timestamptz '2026-04-01T00:00:01Z'),
         ('report.updated', 'system', 'FLAGNOW-B', false, null, 'flagnow-2', timestamptz '2026-04-01T00:00:02Z'),
         ('punishment.updated', 'system', 'FLAGNOW-A', false, '{"report_id": "FLAGNOW-B"}', 'flagnow-3', timestamptz '2026-04-01T00:00:03Z'),
         ('report.updated', 'system', 'FLAGNOW-C', false, null, 'flagnow-4', timestamptz '2026-04-01T00:00:04Z'),
         ('queue.action_completed', 'system', null, true, '{"note": "flagnow"}', 'flagnow-5', timestamptz '2026-04-01T00:00:05Z')`,
    );
    const shown = async (query: string, headers: Record<string, string> = key) =>
      Object.fromEntries(((await audit(query, headers)).events as { correlation_id: string; is_supervisor: boolean }[]).map((e) => [e.correlation_id, e.is_supervisor]));
    const flagged = { 'flagnow-5': false, 'flagnow-4': true, 'flagnow-3': true, 'flagnow-2': true, 'flagnow-1': false };
    expect(await shown('?search=flagnow')).toEqual(flagged);
    expect(await shown('?search=flagnow', supervisor.headers)).toEqual(flagged);
    // A case id's page is a statement prepared once per connection (and planned once, after five runs): run it past that.
    for (let i = 0; i < 7; i++) {
      expect(await shown('?search=FLAGNOW-B')).toEqual({ 'flagnow-2': true });
      expect(await shown(`?search=flagnow-a&sort=${i % 2 === 0 ? 'newest' : 'oldest'}`)).toEqual({ 'flagnow-3': true, 'flagnow-1': false });
    }
    expect(await shown('?search=flagnow&supervisor=only')).toEqual({ 'flagnow-4': true, 'flagnow-3': true, 'flagnow-2': true });
    expect(await shown('?search=flagnow', agent.headers)).toEqual({ 'flagnow-5': false, 'flagnow-1': false });
    // Unflagged now: shown so at the next read, the punishment's event too.
    await t.db.production.query(`update reports set is_supervisor = false where report_id = 'FLAGNOW-B'`);
    expect(await shown('?search=flagnow')).toEqual({ ...flagged, 'flagnow-3': false, 'flagnow-2': false });
    expect(await shown('?search=FLAGNOW-A')).toEqual({ 'flagnow-3': false, 'flagnow-1': false });
    expect(await shown('?search=FLAGNOW-B', supervisor.headers)).toEqual({ 'flagnow-2': false });
  });
});
