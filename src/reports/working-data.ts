// A report's working data (spec: Reports): notes, evidence and free timeline entries. Sessions add
// them while an investigation is in progress, as report-access.ts allows (notes and evidence: the
// assigned agent or supervisor rank; timeline entries: the assigned agent); the bot is not gated. Each write is one transaction under the report's row lock.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Tx } from '../platform/db/types.js';
import type { ReportWork } from '../platform/auth/report-access.js';
import { errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { EvidenceBody, EvidenceResult, NoteBody, NoteResult, ReportIdParams, TimelineBody, TimelineResult } from './action-schemas.js';
import { fullReport, lockReport } from './actions.js';
import { addTimeline, touchReport, type ReportRow } from './queries.js';

const tags = ['Reports'];

async function lockForWork(tx: Tx, request: FastifyRequest, reportId: string, work: ReportWork, what: string): Promise<ReportRow> {
  const report = await lockReport(tx, request, reportId, work);
  if (request.principal?.kind === 'session') {
    if (report.status !== 'Under Investigation') {
      throw errors.conflict(`${what} can only be added while an investigation is in progress`, 'NOT_UNDER_INVESTIGATION');
    }
  }
  return report;
}

/** The scheme is checked on the raw text too: the URL parser forgives leading blanks and such. */
function assertHttpUrl(url: string): void {
  let ok = /^https?:\/\/[^\s]+$/i.test(url);
  if (ok) {
    try {
      const parsed = new URL(url);
      ok = (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
    } catch {
      ok = false;
    }
  }
  if (!ok) throw errors.validation('body.url must be an http or https URL');
}

const eventBase = (request: FastifyRequest, report: ReportRow) => ({
  actor: actorOf(request),
  correlationId: request.id,
  reportId: report.report_id,
  isSupervisor: report.is_supervisor,
});

export const reportWorkingDataRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/reports/:report_id/notes',
    {
      config: { auth: 'either', permission: 'add_case_note', report: 'note' },
      schema: {
        tags,
        operationId: 'addReportNote',
        summary: 'Add a case note (sessions: assigned agent or supervisor rank, during an investigation)',
        params: ReportIdParams,
        body: NoteBody,
        response: { 201: NoteResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const db = request.environment.db;
      const result = await db.transaction(async (tx) => {
        const report = await lockForWork(tx, request, request.params.report_id, 'note', 'Notes');
        const actor = actorOf(request);
        const author = actor.kind === 'agent' ? ['agent', actor.chatId, actor.name ?? null] : ['bot', null, 'Automation bot'];
        const { rows } = await tx.query<{ id: number; report_id: string; note: string; author_kind: string; author_chat_id: string | null; author_name: string | null; created_at: string }>(
          `insert into report_notes (report_id, note, author_kind, author_chat_id, author_name)
           values ($1::text, $2::text, $3::text, $4::text, $5::text)
           returning id, report_id, note, author_kind, author_chat_id, author_name, created_at`,
          [report.report_id, request.body.note, ...author],
        );
        const note = rows[0]!;
        await addTimeline(tx, report.report_id, 'Note added', actor);
        await recordEvent(tx, { ...eventBase(request, report), type: 'report.note_added', data: { note_id: note.id } });
        await touchReport(tx, report.report_id);
        return { note, report: await fullReport(tx, request.principal, report.report_id) };
      });
      return reply.code(201).send({ success: true as const, ...result });
    },
  );

  app.post(
    '/reports/:report_id/evidence',
    {
      config: { auth: 'either', permission: 'add_evidence', report: 'evidence' },
      schema: {
        tags,
        operationId: 'addReportEvidence',
        summary: 'Add an evidence link (http or https; same gates as notes)',
        params: ReportIdParams,
        body: EvidenceBody,
        response: { 201: EvidenceResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const { description, url } = request.body;
      assertHttpUrl(url);
      const db = request.environment.db;
      const result = await db.transaction(async (tx) => {
        const report = await lockForWork(tx, request, request.params.report_id, 'evidence', 'Evidence');
        const actor = actorOf(request);
        const { rows } = await tx.query<{ id: number; report_id: string; description: string; url: string; submitted_by: string | null; submitted_by_id: string | null; created_at: string }>(
          `insert into report_evidence (report_id, description, url, submitted_by) values ($1::text, $2::text, $3::text, $4::text)
           returning id, report_id, description, url, submitted_by, submitted_by as submitted_by_id, created_at`,
          [report.report_id, description, url, actor.kind === 'agent' ? actor.chatId : null],
        );
        const evidence = rows[0]!;
        await addTimeline(tx, report.report_id, `Evidence added: ${description}`, actor);
        await recordEvent(tx, { ...eventBase(request, report), type: 'report.updated', after: { evidence_id: evidence.id }, data: { evidence_id: evidence.id } });
        await touchReport(tx, report.report_id);
        return { evidence, report: await fullReport(tx, request.principal, report.report_id) };
      });
      return reply.code(201).send({ success: true as const, ...result });
    },
  );

  app.post(
    '/reports/:report_id/timeline',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'timeline' },
      schema: {
        tags,
        operationId: 'addTimelineEntry',
        summary: 'Add a timeline entry (sessions: the assigned agent, during an investigation)',
        params: ReportIdParams,
        body: TimelineBody,
        response: { 201: TimelineResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const db = request.environment.db;
      const result = await db.transaction(async (tx) => {
        const report = await lockForWork(tx, request, request.params.report_id, 'timeline', 'Timeline entries');
        const entry = await addTimeline(tx, report.report_id, request.body.event, actorOf(request));
        await recordEvent(tx, { ...eventBase(request, report), type: 'report.timeline_entry_added', data: { timeline_id: entry.id } });
        await touchReport(tx, report.report_id);
        return { event: entry, report: await fullReport(tx, request.principal, report.report_id) };
      });
      return reply.code(201).send({ success: true as const, ...result });
    },
  );
};
