// A report id used again after deletion starts with nothing of the deleted report (issue 29, item
// 1). Every row that belongs to a report belongs to that report's life: removed with it, or handed
// to its pre-image (deleted_reports), or kept as the audit trail. The tables are found in the
// catalog (a report_id column, or a foreign key into such a table), so a table added later is
// covered: the test fails until its rule is declared here and the schema enforces it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DASHBOARD_ORIGIN, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

type Row = Record<string, any>;
const key = { host: 'localhost', authorization: PRODUCTION_KEY };
const ID = 'LIFE-REUSED-1';

/**
 * What becomes of a table's rows of a report when the report is deleted, and how to find them
 * (SQL with $1 the report id) while it lives.
 *   removed     deleted with the report (on delete cascade)
 *   pre-image   kept, handed to the deleted report's pre-image (deleted_report), no longer the live report's
 *   follows     kept with a parent row that is itself handed to the pre-image
 *   trail       kept as written: the audit trail (events are sealed; spec: "timeline and events retained")
 */
const LIVES: Record<string, { fate: 'removed' | 'pre-image' | 'follows' | 'trail'; rows: string }> = {
  report_notes: { fate: 'removed', rows: 'select id::text from report_notes where report_id = $1' },
  report_evidence: { fate: 'removed', rows: 'select id::text from report_evidence where report_id = $1' },
  contact_threads: { fate: 'removed', rows: 'select report_id from contact_threads where report_id = $1' },
  contact_messages: { fate: 'removed', rows: 'select id::text from contact_messages where report_id = $1' },
  report_actions: { fate: 'removed', rows: 'select action_id::text from report_actions where report_id = $1' },
  // The id stays on a timeline row (the history of that id); the life is what ties it to a report.
  report_timeline: {
    fate: 'pre-image',
    rows: 'select t.id::text from report_timeline t join reports r on r.report_id = t.report_id and r.creation_order = t.report_life where r.report_id = $1',
  },
  punishments: { fate: 'pre-image', rows: 'select punishment_id from punishments where report_id = $1' },
  discipline_deliveries: {
    fate: 'follows',
    rows: 'select d.item_id::text from discipline_deliveries d join punishments p on p.punishment_id = d.punishment_id where p.report_id = $1',
  },
  events: { fate: 'trail', rows: 'select id::text from events where report_id = $1' },
  // The record of a retention erasure names its life (report_id, report_life): kept as written.
  case_erasures: { fate: 'trail', rows: 'select id::text from case_erasures where report_id = $1' },
};
/** The report itself and its pre-image: the two ends of a life. */
const ENDS = ['reports', 'deleted_reports'];

let t: TestApp;
let supervisor: Person;
let agent: Person;
const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Row>(sql, values)).rows;
const asKey = (method: 'POST' | 'DELETE' | 'GET', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: key, ...(payload === undefined ? {} : { payload }) });

/** Every table that holds rows of a report: a report_id column, or a foreign key into such a table. */
async function childTables(): Promise<string[]> {
  const { rows } = await t.db.production.query<{ name: string }>(
    `with recursive children(name) as (
       select c.table_name::text from information_schema.columns c
       where c.table_schema = 'public' and c.column_name = 'report_id'
       union
       select child.relname::text from pg_constraint k
       join pg_class child on child.oid = k.conrelid
       join pg_class parent on parent.oid = k.confrelid
       join children on children.name = parent.relname
       where k.contype = 'f')
     select name from children order by name`,
  );
  return rows.map((r) => r.name).filter((name) => !ENDS.includes(name));
}

/** The foreign keys of a table: the table they reference and their delete action (c cascade, n set null, a no action). */
async function foreignKeys(table: string): Promise<{ parent: string; action: string; columns: string }[]> {
  return q(
    `select parent.relname as parent, k.confdeltype::text as action,
            (select string_agg(a.attname, ',' order by a.attnum) from pg_attribute a where a.attrelid = k.conrelid and a.attnum = any(k.conkey)) as columns
     from pg_constraint k join pg_class child on child.oid = k.conrelid join pg_class parent on parent.oid = k.confrelid
     where k.contype = 'f' and child.relname = $1::text order by 1, 3`,
    [table],
  ) as never;
}

beforeAll(async () => {
  t = await createTestApp();
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
  agent = await signedIn(t, { rank: 'Agent', clearance: 4 });
});
afterAll(() => t.close());

describe('the catalog', () => {
  it('declares what becomes of every table that holds rows of a report, and the schema enforces it', async () => {
    const tables = await childTables();
    expect(tables).toEqual(Object.keys(LIVES).sort());
    for (const [table, { fate }] of Object.entries(LIVES)) {
      const keys = await foreignKeys(table);
      if (fate === 'removed') {
        // Cascades from the live report, directly or through a parent that does.
        expect(keys.some((k) => k.action === 'c' && (k.parent === 'reports' || LIVES[k.parent]?.fate === 'removed')), `${table}: ${JSON.stringify(keys)}`).toBe(true);
      } else if (fate === 'pre-image') {
        // References the live report's row (cleared on deletion) and the pre-image it is handed to.
        expect(keys.some((k) => k.parent === 'reports' && k.action === 'n'), `${table}: ${JSON.stringify(keys)}`).toBe(true);
        expect(keys.some((k) => k.parent === 'deleted_reports' && k.columns === 'deleted_report'), `${table}: ${JSON.stringify(keys)}`).toBe(true);
      } else if (fate === 'follows') {
        expect(keys.some((k) => LIVES[k.parent]?.fate === 'pre-image'), `${table}: ${JSON.stringify(keys)}`).toBe(true);
      }
    }
    // The timeline names the life, not only the id: its key is (report_id, report_life).
    expect(await foreignKeys('report_timeline')).toContainEqual({ parent: 'reports', action: 'n', columns: 'report_id,report_life' });
  });
});

describe('a report id used again after deletion', () => {
  it('starts with nothing of the deleted report: every table, the full report, the contact thread, the queue and the punishments', async () => {
    // A flagged report with a row in every table that can hold one.
    const created = await asKey('POST', '/reports/create', {
      report_id: ID, reporter: chatId(), reported: chatId(), reason: 'supervisor case', notes: 'n', evidence: 'e',
      is_supervisor: true, status: 'Under Investigation', evidence_url: 'https://evidence.example/1',
    });
    expect(created.statusCode, created.body).toBe(201);
    expect((await asKey('POST', `/reports/${ID}/notes`, { note: 'A secret note' })).statusCode).toBe(201);
    expect((await asKey('POST', `/reports/${ID}/evidence`, { description: 'Clip', url: 'https://evidence.example/2' })).statusCode).toBe(201);
    expect((await asKey('POST', `/reports/${ID}/timeline`, { event: 'Investigation started: supervisor case' })).statusCode).toBe(201);
    expect((await asKey('POST', `/reports/${ID}/action`, { action: 'contact_reporter', reason: 'Tell us more' })).statusCode).toBe(200);
    const issued = await t.app.inject({
      method: 'POST', url: '/punishments', headers: { ...supervisor.headers, origin: DASHBOARD_ORIGIN },
      payload: { user_id: chatId(), reason: 'Cited a supervisor case', report_id: ID },
    });
    expect(issued.statusCode, issued.body).toBe(201);
    const punishmentId = issued.json().punishment.punishment_id as string;

    // A retention erasure's record of this life, as src/admin/retention writes it (a report closed
    // past RETENTION_DAYS; the schedule itself is tested in test/retention.test.ts).
    await q(
      `insert into case_erasures (report_id, report_life, closed_at, reference, counts, correlation_id)
       select report_id, creation_order, updated_at, 'retention', '{}', 'report-lives' from reports where report_id = $1`,
      [ID],
    );
    const planted: Record<string, string[]> = {};
    for (const [table, { rows }] of Object.entries(LIVES)) {
      planted[table] = (await q(rows, [ID])).map((r) => Object.values(r)[0] as string);
      expect(planted[table]!.length, `no row of ${table} was planted: add one above`).toBeGreaterThan(0);
    }
    const [{ life: oldLife }] = (await q('select creation_order::text as life from reports where report_id = $1', [ID])) as [Row];

    const deleted = await asKey('DELETE', `/reports/${ID}`, { reason: 't' });
    expect(deleted.statusCode, deleted.body).toBe(200);
    const [preImage] = (await q('select id::text, (pre_image ->> $2) as flag from deleted_reports where report_id = $1', [ID, 'is_supervisor'])) as [Row];
    expect(preImage.flag).toBe('true');

    const again = await asKey('POST', '/reports/create', { report_id: ID, reporter: chatId(), reported: chatId(), reason: 'an unrelated case', notes: 'n', evidence: 'e' });
    expect(again.statusCode, again.body).toBe(201);
    const [{ life: newLife }] = (await q('select creation_order::text as life from reports where report_id = $1', [ID])) as [Row];
    expect(newLife).not.toBe(oldLife);

    // Each table: the old life's rows are gone, or kept without a link to the new report.
    for (const [table, { fate, rows }] of Object.entries(LIVES)) {
      const now = (await q(rows, [ID])).map((r) => Object.values(r)[0] as string);
      const inherited = planted[table]!.filter((id) => now.includes(id));
      if (fate === 'trail') expect(inherited, table).toEqual(planted[table]);
      else expect(inherited, `${table} rows of the deleted report hang off the new one`).toEqual([]);
    }
    expect(await q('select count(*)::int as n from report_notes where report_id = $1', [ID])).toEqual([{ n: 0 }]);
    const oldTimeline = await q('select event, report_life, deleted_report::text from report_timeline where id = any($1::bigint[]) order by id', [planted.report_timeline]);
    expect(oldTimeline.map((r) => [r.report_life, r.deleted_report])).toEqual(planted.report_timeline!.map(() => [null, preImage.id]));
    const deletion = await q(`select report_life, deleted_report::text from report_timeline where report_id = $1 and event = 'Report deleted: t'`, [ID]);
    expect(deletion).toEqual([{ report_life: null, deleted_report: preImage.id }]);
    expect(await q('select report_id, deleted_report::text from punishments where punishment_id = $1', [punishmentId])).toEqual([{ report_id: null, deleted_report: preImage.id }]);

    // What the callers see of the new report: its own rows only.
    const full = await t.app.inject({ url: `/reports/${ID}`, headers: agent.headers });
    expect(full.statusCode, full.body).toBe(200);
    const body = full.json().report;
    expect(body).toMatchObject({ report_id: ID, is_supervisor: false, reason: 'an unrelated case', notes_list: [], evidence_list: [] });
    expect(body.timeline.map((e: Row) => e.event)).toEqual(['Report created']);
    expect(JSON.stringify(full.json())).not.toMatch(/supervisor case|A secret note|Report deleted/);
    expect((await asKey('GET', `/reports/${ID}/contact`)).statusCode).toBe(404);
    const queue = (await asKey('GET', '/actions/pending?limit=50')).json();
    expect(queue.actions.filter((a: Row) => a.report_id === ID)).toEqual([]);

    // The punishment that cited the deleted, flagged report stays as hidden as that report was.
    const refused = await t.app.inject({ url: `/punishments/${punishmentId}`, headers: agent.headers });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'SUPERVISOR_ONLY' });
    const shown = await t.app.inject({ url: `/punishments/${punishmentId}`, headers: supervisor.headers });
    expect(shown.json().punishment).toMatchObject({ punishment_id: punishmentId, report_id: null, reason: 'Cited a supervisor case' });
  });

  it('the database keeps the lives itself: the statements of the release before (no life named) still write them right', async () => {
    const id = 'LIFE-OLD-RELEASE';
    await t.db.production.transaction(async (tx) => {
      await tx.query(`insert into reports (report_id, reporter, reported, reason, notes, evidence) values ($1, '1', '2', 'r', 'n', 'e')`, [id]);
      await tx.query(`insert into report_timeline (report_id, event, actor_kind) values ($1, 'Report created', 'bot')`, [id]);
    });
    const [{ life }] = (await q('select creation_order::text as life from reports where report_id = $1', [id])) as [Row];
    expect(await q('select report_life::text, deleted_report from report_timeline where report_id = $1', [id])).toEqual([{ report_life: life, deleted_report: null }]);
    // Its deletion: the pre-image, then the row, then the "Report deleted" entry.
    const preImage = await t.db.production.transaction(async (tx) => {
      const { rows } = await tx.query<Row>(
        `insert into deleted_reports (report_id, pre_image, reason, deleted_by_kind, correlation_id) values ($1, '{}', 'old release', 'bot', 'c') returning id::text`,
        [id],
      );
      await tx.query('delete from reports where report_id = $1', [id]);
      await tx.query(`insert into report_timeline (report_id, event, actor_kind) values ($1, 'Report deleted: old release', 'bot')`, [id]);
      return rows[0]!.id as string;
    });
    expect(await q('select event, report_life, deleted_report::text from report_timeline where report_id = $1 order by id', [id])).toEqual([
      { event: 'Report created', report_life: null, deleted_report: preImage },
      { event: 'Report deleted: old release', report_life: null, deleted_report: preImage },
    ]);
  });

  it('a timeline row cannot be written for no life, nor a report deleted with its timeline left behind', async () => {
    await expect(q(`insert into report_timeline (report_id, event, actor_kind) values ('NO-SUCH-REPORT', 'x', 'bot')`)).rejects.toThrow(/report_timeline_belongs/);
    const id = 'LIFE-SQL-DELETE';
    expect((await asKey('POST', '/reports/create', { report_id: id, reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' })).statusCode).toBe(201);
    // Removing a report outside the service, without its pre-image, is refused by the schema.
    await expect(q('delete from reports where report_id = $1', [id])).rejects.toThrow(/report_timeline_belongs/);
    expect(await q('select count(*)::int as n from reports where report_id = $1', [id])).toEqual([{ n: 1 }]);
  });
});
