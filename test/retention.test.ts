// Retention (issue 32, RETENTION_DAYS): on its schedule, a case closed longer ago than the
// retention loses its people's chat ids (to pseudonyms), names and words (to the marker) in every
// row of its life, events and admin audit rows included, and the chain still verifies; the
// erasure is recorded and shown in GET /admin/health. A recent closed case, an open one, one whose
// person has a punishment in force (until it is revoked) and the demo environment are left alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPseudonym } from '../src/platform/audit-chain/personal-fields.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { plantCase, type PlantedCase } from './helpers/cases.js';
import { sealedAndVerified, traces } from './helpers/erasure-checks.js';
import { signedIn, type Person } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';

const INTERVAL_MS = 100;

/** Resolves once `check` holds (polled), or fails with what it last saw. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!check(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS / 2));
    value = await read();
  }
  expect(check(value), JSON.stringify(value).slice(0, 2000)).toBe(true);
  return value;
}

describe(`retention of closed cases on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let staff: { chat_id: string; name: string };
  const cases: Record<'old' | 'recent' | 'open' | 'held' | 'demo', PlantedCase> = {} as never;
  const health = async (who = director) => {
    const res = await t.app.inject({ method: 'GET', url: '/admin/health', headers: who.headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().database.retention;
  };
  const erasures = async () => (await t.db.production.query<{ report_id: string; reference: string; counts: Record<string, number> }>('select report_id, reference, counts from case_erasures order by id')).rows;

  beforeAll(async () => {
    t = await createTestApp({ env: { RETENTION_DAYS: '30' }, retentionIntervalMs: INTERVAL_MS });
    director = await admin(t);
    const agent = (await signedIn(t, { rank: 'Supervisor', clearance: 3, name: 'Rhea Staff' })).agent;
    staff = { chat_id: agent.chat_id, name: agent.name ?? 'Rhea Staff' };
    // Planted recent, sealed, then aged: the erasure meets sealed rows, as in service.
    cases.old = await plantCase(t.db.production, staff, { closedDaysAgo: 0 });
    cases.recent = await plantCase(t.db.production, staff, { status: 'Invalidated', closedDaysAgo: 2 });
    cases.open = await plantCase(t.db.production, staff, { status: 'Under Investigation', closedDaysAgo: 90 });
    cases.held = await plantCase(t.db.production, staff, { status: 'Invalidated', closedDaysAgo: 0 });
    const demoStaff = (await signedIn(t, { env: 'demo', name: 'Demo Staff' })).agent;
    cases.demo = await plantCase(t.db.demo, { chat_id: demoStaff.chat_id, name: demoStaff.name ?? 'Demo Staff' }, { closedDaysAgo: 400 });
    await t.db.production.query(
      `insert into punishments (punishment_id, user_id, username, reason, status, report_id, issued_by, issued_by_name) values ('RT1NQ2', $1::text, 'held', 'Spam', 'Active', $2::text, $3::text, $4::text)`,
      [cases.held.reported, cases.held.reportId, staff.chat_id, staff.name],
    );
    await sealedAndVerified(t.db.production);
    await t.db.production.query(`update reports set updated_at = now() - interval '45 days' where report_id = any($1::text[])`, [[cases.old.reportId, cases.held.reportId]]);
  }, 60_000);
  afterAll(() => t.close());

  it('erases the case closed past the retention on the schedule, everywhere its life is, and records it', async () => {
    const [erasure] = await eventually(erasures, (rows) => rows.length === 1);
    expect(erasure).toMatchObject({ report_id: cases.old.reportId, reference: 'retention' });
    expect(erasure!.counts).toMatchObject({ reports: 1, report_notes: 1, report_evidence: 1, contact_messages: 1, report_actions: 1, deleted_reports: 1, events: 2, audit_log: 1 });
    expect(await traces(t.db.production, cases.old.secrets)).toEqual([]);

    // The case and what was decided stay; its people are pseudonyms, one each.
    const { rows } = await t.db.production.query<{ status: string; reporter: string; reported: string; assigned_agent: string; reporter_name: string }>(
      'select status, reporter, reported, assigned_agent, reporter_name from reports where report_id = $1::text', [cases.old.reportId]);
    expect(rows[0]).toMatchObject({ status: 'Validated', assigned_agent: staff.chat_id, reporter_name: '[erased]' });
    expect(isPseudonym(rows[0]!.reporter) && isPseudonym(rows[0]!.reported) && rows[0]!.reporter !== rows[0]!.reported).toBe(true);
    const { rows: notes } = await t.db.production.query<{ note: string; author_name: string }>('select note, author_name from report_notes where report_id = $1::text', [cases.old.reportId]);
    expect(notes).toEqual([{ note: 'Spoke with [erased]; the reporter said "[erased]"', author_name: staff.name }]);

    // Recorded: the admin audit row and its event, by the service itself, naming the case only.
    const { rows: audit } = await t.db.production.query<{ actor_kind: string; target: string; reason: string; after: { reference: string; counts: object } }>(
      `select actor_kind, target, reason, after from audit_log where action = 'admin.case_erased'`);
    expect(audit).toEqual([{ actor_kind: 'system', target: cases.old.reportId, reason: 'Retention: closed more than 30 days ago (RETENTION_DAYS)', after: expect.objectContaining({ reference: 'retention', counts: erasure!.counts }) }]);
    const { rows: events } = await t.db.production.query(`select actor_kind from events where type = 'admin.case_erased'`);
    expect(events).toEqual([{ actor_kind: 'system' }]);

    const v = await sealedAndVerified(t.db.production);
    expect(v.erased).toEqual([{ reference: 'retention', rows: 3 }]);
  });

  it('leaves a recent closed case, an open case, one whose person has a punishment in force, and the demo environment', async () => {
    const retention = await eventually(() => health(), (r) => r.cases_held === 1);
    expect(retention).toEqual({
      days: 30, interval_s: INTERVAL_MS / 1000, last_run_at: expect.stringMatching(/Z$/), cases_erased: 1, cases_waiting: 1, cases_held: 1, last_error_at: null, last_error: null,
    });
    for (const c of [cases.recent, cases.open, cases.held]) expect((await traces(t.db.production, c.secrets)).length).toBeGreaterThanOrEqual(c.secrets.length);
    expect((await traces(t.db.demo, cases.demo.secrets)).length).toBeGreaterThanOrEqual(cases.demo.secrets.length);
    expect((await t.db.demo.query('select 1 from case_erasures')).rows).toEqual([]);
    expect(await health(await admin(t, { env: 'demo' }))).toMatchObject({ days: null, last_run_at: null, cases_erased: 0, cases_waiting: null });
    expect((await erasures()).map((e) => e.report_id)).toEqual([cases.old.reportId]);
  });

  it('erases the held case once its punishment is no longer in force', async () => {
    await t.db.production.query(`update punishments set status = 'Revoked', revoked_at = now(), revoked_by = $1::text, revoke_reason = 'Appeal upheld' where punishment_id = 'RT1NQ2'`, [staff.chat_id]);
    await eventually(erasures, (rows) => rows.length === 2);
    expect(await traces(t.db.production, cases.held.secrets)).toEqual([]);
    expect(await eventually(() => health(), (r) => r.cases_erased === 2)).toMatchObject({ cases_waiting: 0, cases_held: 0 });
    // The punishment's existence and terms stay; its user is the pseudonym.
    const { rows } = await t.db.production.query<{ user_id: string; status: string; reason: string }>(`select user_id, status, reason from punishments where punishment_id = 'RT1NQ2'`);
    expect(rows).toEqual([{ user_id: expect.stringMatching(/^0\d{19}$/), status: 'Revoked', reason: 'Spam' }]);
    await sealedAndVerified(t.db.production);
  });
});

describe(`retention without RETENTION_DAYS on ${storeName}`, () => {
  let t: TestApp;
  afterAll(() => t.close());

  it('erases nothing and says so in health', async () => {
    t = await createTestApp({ retentionIntervalMs: 20 });
    const director = await admin(t);
    const agent = (await signedIn(t, { name: 'Kept Staff' })).agent;
    const kept = await plantCase(t.db.production, { chat_id: agent.chat_id, name: agent.name ?? 'Kept Staff' }, { closedDaysAgo: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await t.db.production.query('select 1 from case_erasures')).rows).toEqual([]);
    expect((await traces(t.db.production, kept.secrets)).length).toBeGreaterThanOrEqual(kept.secrets.length);
    const res = await t.app.inject({ method: 'GET', url: '/admin/health', headers: director.headers });
    expect(res.json().database.retention).toMatchObject({ days: null, last_run_at: null, cases_erased: 0, cases_waiting: null });
  });
});
