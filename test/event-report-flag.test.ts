// events.report_flagged (migration 0033, issue 38) is the visibility model's answer for the event:
// a flagged report it is about, now. The model-based test checks it after every command
// (confidentiality-model.property.test.ts); here, the writes that race a flag change on
// PostgreSQL, each failing before its lock: an event written by a transaction that did not lock its
// report while the flag changes, a flag changed by an UPDATE that did not lock the row while an
// event is written, and an event about a deleted report while a report of its id is created
// flagged. The racing transaction is a client of its own by SQL (the service's own writes lock the
// report first), held open so that the two interleave the one way that loses a flag without the
// locks. Reports, flags, deletions through the routes.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { key, reportCrudHelpers } from './helpers/reports.js';
import { onPostgres, storeName } from './helpers/stores.js';

describe(`events.report_flagged, on ${storeName}`, () => {
  let t: TestApp;
  const crud = reportCrudHelpers(() => t);
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const flags = async (id: string) =>
    (await t.db.production.query<{ type: string; report_flagged: boolean }>('select type, report_flagged from events where report_id = $1::text order by id', [id])).rows;
  const note = async (id: string) => {
    const res = await t.app.inject({ method: 'POST', url: `/reports/${id}/notes`, headers: key, payload: { note: 'checked the footage' } });
    expect(res.statusCode, res.body).toBe(201);
  };
  const flag = async (id: string, value: boolean) => {
    const res = await crud.patch(id, { is_supervisor: value });
    expect(res.statusCode, res.body).toBe(200);
  };

  it("follows the report's flag now: written before, during and after it, and through a deletion and a reuse of the id", async () => {
    const id = await crud.createOk();
    await note(id);
    expect((await flags(id)).map((e) => e.report_flagged)).toEqual([false, false]);
    await flag(id, true);
    await note(id);
    // The flag's own event (report.updated) is about a flagged report as well.
    expect((await flags(id)).map((e) => e.report_flagged)).toEqual([true, true, true, true]);
    await flag(id, false);
    expect((await flags(id)).every((e) => !e.report_flagged)).toBe(true);
    await flag(id, true);
    const deleted = await crud.del(id, { reason: 'Filed twice' });
    expect(deleted.statusCode, deleted.body).toBe(200);
    // A report of the id filed again, unflagged: the deleted one's flag keeps every event hidden.
    await crud.createOk({ report_id: id });
    expect((await flags(id)).map((e) => [e.type, e.report_flagged])).toEqual([
      ['report.created', true], ['report.note_added', true], ['report.updated', true], ['report.note_added', true],
      ['report.updated', true], ['report.updated', true], ['report.deleted', true], ['report.created', true],
    ]);
  });

  describe.runIf(onPostgres)('racing a flag change', () => {
    let other: pg.Client;
    beforeAll(async () => {
      other = new pg.Client({ connectionString: t.urls.production });
      await other.connect();
    });
    afterAll(() => other?.end());

    /** An event as a writer that does not lock the report writes it (the stale sweep's, say), uncommitted. */
    const eventInFlight = async (id: string) => {
      await other.query('begin');
      await other.query(
        `insert into events (type, actor_kind, report_id, after, correlation_id) values ('report.action_failed', 'system', $1::text, '{}'::jsonb, 'race')`,
        [id],
      );
    };
    const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

    it('an event in flight while the flag changes is flagged once both commit', async () => {
      const id = await crud.createOk();
      await eventInFlight(id);
      const flagged = crud.patch(id, { is_supervisor: true });
      await settle();
      await other.query('commit');
      expect((await flagged).statusCode).toBe(200);
      expect((await flags(id)).map((e) => [e.type, e.report_flagged])).toEqual([['report.created', true], ['report.action_failed', true], ['report.updated', true]]);
    });

    it('a flag changed by an UPDATE that locked nothing first waits for the event written meanwhile', async () => {
      const id = await crud.createOk();
      const writer = new pg.Client({ connectionString: t.urls.production });
      await writer.connect();
      try {
        await other.query('begin');
        await other.query('update reports set is_supervisor = true where report_id = $1::text', [id]);
        const written = writer.query(
          `insert into events (type, actor_kind, report_id, after, correlation_id) values ('report.action_failed', 'system', $1::text, '{}'::jsonb, 'race')`,
          [id],
        );
        await settle();
        await other.query('commit');
        await written;
      } finally {
        await writer.end();
      }
      expect((await flags(id)).map((e) => [e.type, e.report_flagged])).toEqual([['report.created', true], ['report.action_failed', true]]);
    });

    it("an event about a deleted report's id in flight while a report of that id is filed flagged is flagged", async () => {
      const id = await crud.createOk();
      const deleted = await crud.del(id, { reason: 'Filed twice' });
      expect(deleted.statusCode, deleted.body).toBe(200);
      await eventInFlight(id);
      const filed = crud.create({ report_id: id, is_supervisor: true });
      await settle();
      await other.query('commit');
      expect((await filed).res.statusCode).toBe(201);
      expect((await flags(id)).map((e) => [e.type, e.report_flagged])).toEqual([
        ['report.created', true], ['report.deleted', true], ['report.action_failed', true], ['report.created', true],
      ]);
    });
  });
});
