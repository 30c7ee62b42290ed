// Shared by the report CRUD tests (test/reports-*.test.ts): report bodies, requests on the app, and
// readers of the rows and events the routes write.
import { expect } from 'vitest';
import { PRODUCTION_KEY, type TestApp } from './app.js';
import { chatId } from './identity.js';

export type Row = Record<string, any>;

export const key = { authorization: PRODUCTION_KEY };

export function seedReportBody(reportId: string, reporter: string) {
  return { report_id: reportId, reporter, reported: chatId(), reason: 'Payload check', notes: 'n', evidence: 'e' };
}

/** Requests and readers on the app `app()` returns (built later, in beforeAll). */
export function reportCrudHelpers(app: () => TestApp) {
  let n = 0;
  const newId = () => `R-${process.pid}-${++n}`;
  const base = (report_id = newId()) => ({ report_id, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' });

  const rows = async (sql: string, id: string) => (await app().db.production.query(sql, [id])).rows as Row[];
  // Undefined when there is no such report (typed as a row for brevity).
  const reportRow = async (id: string) => (await rows('select * from reports where report_id = $1::text', id))[0] as Row;
  const timeline = (id: string) => rows('select event, actor_kind, actor_chat_id from report_timeline where report_id = $1::text order by id', id);
  const events = (id: string) => rows('select type, actor_kind, actor_chat_id, before, after, data, correlation_id, is_supervisor from events where report_id = $1::text order by id', id);
  const evidence = (id: string) => rows('select description, url, submitted_by from report_evidence where report_id = $1::text order by id', id);

  async function create(overrides: Row = {}, headers: Record<string, string> = key) {
    const payload = { ...base(), ...overrides };
    const res = await app().app.inject({ method: 'POST', url: '/reports/create', headers, payload });
    return { res, id: payload.report_id as string };
  }
  async function createOk(overrides: Row = {}) {
    const { res, id } = await create(overrides);
    expect(res.statusCode).toBe(201);
    return id;
  }
  const patch = (id: string, payload: object, headers: Record<string, string> = key) =>
    app().app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers, payload });
  const del = (id: string, payload: object | undefined, headers: Record<string, string> = key) =>
    app().app.inject({ method: 'DELETE', url: `/reports/${id}`, headers, ...(payload ? { payload } : {}) });

  return { newId, base, rows, reportRow, timeline, events, evidence, create, createOk, patch, del };
}
