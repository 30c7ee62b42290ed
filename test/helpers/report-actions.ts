// Shared by the report work tests (test/report-actions.test.ts, test/report-investigation.test.ts,
// test/report-entries.test.ts): the app, reports written behind its back, and readers of the rows
// and events the routes write.
import { expect } from 'vitest';
import { refuseInserts } from './failures.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './app.js';

export type Row = Record<string, any>;

export const key = { authorization: PRODUCTION_KEY };
export const conflict = (error: string, code: string) => ({ success: false, error, code });
export const STATUS_CHANGED = conflict('This action can no longer be performed because the case status changed', 'STATUS_CHANGED');

export async function createReportTestApp(): Promise<TestApp> {
  const t = await createTestApp();
  // A mid-transaction failure on demand: reports whose id starts with FAIL- cannot get a queue
  // row or an event, after the earlier writes of their transaction have gone through.
  await refuseInserts(t.db.production, 'refuse_fail_reports', `new.report_id like 'FAIL-%'`, ['report_actions', 'events']);
  return t;
}

export interface ReportSeed {
  prefix?: string;
  status?: string;
  assigned_agent?: string | null;
  is_supervisor?: boolean;
}

/** Seeding, reading and request helpers on the app `app()` returns (built later, in beforeAll). */
export function reportHelpers(app: () => TestApp) {
  let seq = 0;

  /** A report written straight into the store, last updated an hour ago. */
  async function makeReport(seed: ReportSeed = {}): Promise<string> {
    const id = `${seed.prefix ?? 'RA'}-${process.pid}-${++seq}`;
    const status = seed.status ?? 'Open';
    await app().db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, status, assigned_agent, is_supervisor,
         investigation_started_at, created_at, updated_at)
       values ($1::text, '300000000000000001', '300000000000000002', 'Harassment', '', '', $2::text, $3::text, $4::boolean,
         case when $2::text = 'Under Investigation' then now() - interval '1 hour' end, now() - interval '1 hour', now() - interval '1 hour')`,
      [id, status, seed.assigned_agent ?? null, seed.is_supervisor ?? false],
    );
    return id;
  }

  const q = async (sql: string, id: string) => (await app().db.production.query(sql, [id])).rows as Row[];
  const reportRow = async (id: string) => (await q('select * from reports where report_id = $1::text', id))[0]!;
  const timeline = (id: string) => q('select event, actor_kind, actor_chat_id, actor_name from report_timeline where report_id = $1::text order by id', id);
  const events = (id: string) =>
    q('select type, actor_kind, actor_chat_id, before, after, data, is_supervisor, correlation_id from events where report_id = $1::text order by id', id);
  const queue = (id: string) => q('select kind, queue, status, payload, requested_by from report_actions where report_id = $1::text order by action_id', id);
  const freshlyUpdated = async (id: string) => Date.now() - Date.parse((await reportRow(id)).updated_at) < 60_000;

  async function nothingWritten(id: string) {
    expect(await timeline(id)).toEqual([]);
    expect(await events(id)).toEqual([]);
    expect(await queue(id)).toEqual([]);
    expect(await freshlyUpdated(id)).toBe(false);
  }

  const post = (url: string, headers: Record<string, string>, payload?: unknown) =>
    app().app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const act = (id: string, headers: Record<string, string>, action: string, reason = 'Because') => post(`/reports/${id}/action`, headers, { action, reason });

  return { makeReport, q, reportRow, timeline, events, queue, freshlyUpdated, nothingWritten, post, act };
}
