// The report list totals (report_counts, kept by triggers per statement) against a count of the
// rows: after route writes, statements of many rows, and concurrent writers on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { key, seedReportBody } from './helpers/reports.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

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
