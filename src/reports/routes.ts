// Report CRUD (spec: Reports): create, list, read, update, delete, the compatibility no-ops and the
// bot's chat-profile delivery. Every change is one transaction with its timeline row and event.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { assertMaySeeReport, assertMaySendReportFields, assertMayUpdateReport, assertMayWorkOnReport, filterKeepsToUnflagged, seesFlaggedReports } from '../platform/auth/report-access.js';
import { errors } from '../platform/errors.js';
import type { Tx } from '../platform/db/types.js';
import { recordEvent, type Actor } from '../platform/events.js';
import { actorOf, readDb } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { listAllReports, listReportPage, redact } from './list.js';
import {
  addTimeline, deleteReportWithPreImage, findReport, fullReportOfCreated, insertInitialEvidence, insertReport, loadFullReport, REPORT_STATUSES, sealedPreImage,
  updateReportFields, upsertChatProfile, WHOLE, type ReportChanges, type ReportRow, type ReportStatus,
} from './queries.js';
import {
  ChatProfilesBody, ChatProfilesResult, CreateReportBody, DeleteReportBody, DeleteReportResult, FullReportResult, Ok, ReportList,
  ReportListQuery, ReportParams, UpdateReportBody, type UpdateReportBody as UpdateBody,
} from './schemas.js';

const tags = ['Reports'];
const FORM = 'application/x-www-form-urlencoded';
const FORM_OPTIONAL = ['reporter_name', 'reported_name', 'status', 'assigned_agent', 'thread_id', 'evidence_url'];
const PAGE_ONLY = ['offset', 'statuses', 'type', 'contact_open', 'sort'] as const;

/** Form bodies carry only strings: the boolean is spelled out, and an empty optional field is absent. */
async function normaliseFormBody(request: FastifyRequest): Promise<void> {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== FORM || typeof request.body !== 'object' || request.body === null) return;
  const body = request.body as Record<string, unknown>;
  for (const field of FORM_OPTIONAL) if (body[field] === '') delete body[field];
  if ('is_supervisor' in body) {
    if (body.is_supervisor === 'true') body.is_supervisor = true;
    else if (body.is_supervisor === 'false') body.is_supervisor = false;
    else throw errors.validation('body.is_supervisor must be true or false');
  }
}

function parseStatuses(list: string | undefined): ReportStatus[] | undefined {
  if (list === undefined) return undefined;
  const values = list.split(',').map((s) => s.trim()).filter(Boolean);
  if (values.length === 0) return undefined;
  const bad = values.find((s) => !(REPORT_STATUSES as readonly string[]).includes(s));
  if (bad !== undefined) throw errors.validation(`querystring.statuses: "${bad}" is not a report status (one of: ${REPORT_STATUSES.join(', ')})`);
  return values as ReportStatus[];
}

export const reportsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/reports/create',
    {
      config: { auth: 'either', permission: 'manage_dockets', acceptsForm: true },
      preValidation: normaliseFormBody,
      schema: {
        tags,
        operationId: 'createReport',
        summary: 'Create a report (JSON or form-encoded)',
        consumes: ['application/json', FORM],
        body: CreateReportBody,
        response: { 201: FullReportResult, ...errorResponses(400, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      // Creating a report flagged is seeing one: supervisor rank (or the bot).
      assertMaySeeReport(request, { is_supervisor: body.is_supervisor === true });
      const actor = actorOf(request);
      const report = await request.environment.db.transaction(async (tx) => {
        const created = await insertReport(tx, request.principal, body);
        if (!created) throw errors.conflict(`Report ${body.report_id} already exists`, 'DUPLICATE');
        const { assigned_agent_name: _name, chat_profiles: _profiles, ...row } = created;
        const timeline = await addTimeline(tx, row.report_id, 'Report created', actor);
        await recordEvent(tx, { type: 'report.created', actor, correlationId: request.id, reportId: row.report_id, after: row, isSupervisor: row.is_supervisor });
        const evidence =
          body.evidence_url === undefined
            ? undefined
            : await insertInitialEvidence(tx, row.report_id, body.evidence_url, actor.kind === 'agent' ? actor.chatId : null);
        return fullReportOfCreated(created, timeline, evidence);
      });
      return reply.code(201).send({ success: true as const, report });
    },
  );

  app.get(
    '/reports',
    {
      config: { auth: 'either', permission: 'view_dashboard' },
      schema: {
        tags,
        operationId: 'listReports',
        summary: 'Reports, newest first: the whole list, or a page when limit is given',
        querystring: ReportListQuery,
        response: { 200: ReportList, ...errorResponses(400, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const q = request.query;
      const db = readDb(request);
      const supervisor = seesFlaggedReports(request.principal);
      if (q.limit === undefined) {
        const stray = PAGE_ONLY.find((name) => q[name] !== undefined);
        if (stray) throw errors.validation(`querystring.limit is required with querystring.${stray}`);
        return { success: true as const, reports: redact(await listAllReports(db, q.status), supervisor) };
      }
      let statuses = parseStatuses(q.statuses);
      if (q.status !== undefined) statuses = statuses ? statuses.filter((s) => s === q.status) : [q.status];
      const offset = q.offset ?? 0;
      // A placeholder does not show whether a contact thread is open (report-access.ts).
      const hidden = filterKeepsToUnflagged(request.principal, q.contact_open);
      const pageQuery = { limit: q.limit, offset, statuses, type: hidden ? ('operator' as const) : q.type, contactOpen: q.contact_open, sort: q.sort };
      const found = await listReportPage(db, pageQuery);
      const page = hidden && q.type === 'supervisor' ? { ...found, rows: [], total: 0 } : found;
      return {
        success: true as const,
        reports: redact(page.rows, supervisor),
        total: page.total,
        offset,
        limit: q.limit,
        counts: { operator: page.counts.operator, supervisor: supervisor ? page.counts.supervisor : 0 },
      };
    },
  );

  app.get(
    '/reports/:report_id',
    {
      config: { auth: 'either', permission: 'view_dashboard', report: 'read' },
      schema: { tags, operationId: 'getReport', summary: 'One full report', params: ReportParams, response: { 200: FullReportResult, ...errorResponses(400, 404, ...COMMON_ERRORS) } },
    },
    async (request) => {
      const report = await loadFullReport(readDb(request), request.principal, request.params.report_id);
      if (!report) throw errors.notFound(`Report ${request.params.report_id}`);
      assertMaySeeReport(request, report);
      return { success: true as const, report };
    },
  );

  app.patch(
    '/reports/:report_id/update',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'update' },
      schema: {
        tags,
        operationId: 'updateReport',
        summary: 'Update whitelisted report fields (reassignment needs reassign_docket)',
        params: ReportParams,
        body: UpdateReportBody,
        response: { 200: FullReportResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const body = request.body;
      if (Object.keys(body).length === 0) throw errors.validation('body has no field to update');
      const fields = Object.keys(body);
      assertMaySendReportFields(request, fields);
      const report = await request.environment.db.transaction(async (tx) => {
        const current = await findReport(tx, request.params.report_id, { forUpdate: true });
        if (!current) throw errors.notFound(`Report ${request.params.report_id}`);
        assertMayUpdateReport(request, current, fields);
        await applyReportUpdate(tx, current, body, actorOf(request), request.id);
        return (await loadFullReport(tx, request.principal, current.report_id))!;
      });
      return { success: true as const, report };
    },
  );

  app.delete(
    '/reports/:report_id',
    {
      config: { auth: 'either', permission: 'delete_docket', report: 'delete' },
      // A DELETE usually comes without a body: an empty object makes the missing reason a
      // "body.reason is required" like any other missing field.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) request.body = {} as never;
      },
      schema: {
        tags,
        operationId: 'deleteReport',
        summary: 'Hard delete with a reason: pre-image kept, timeline and events retained',
        params: ReportParams,
        body: DeleteReportBody,
        response: { 200: DeleteReportResult, ...errorResponses(400, 404, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { reason } = request.body;
      const actor = actorOf(request);
      const deleted = await request.environment.db.transaction(async (tx) => {
        const current = await findReport(tx, request.params.report_id, { forUpdate: true });
        if (!current) throw errors.notFound(`Report ${request.params.report_id}`);
        assertMayWorkOnReport(request, current, 'delete');
        const preImage = (await loadFullReport(tx, WHOLE, current.report_id))!;
        const { deleted_at } = await deleteReportWithPreImage(tx, { reportId: current.report_id, preImage, reason, deletedBy: actor, correlationId: request.id });
        // Written after the row is gone: it belongs to the pre-image (migration 0025).
        await addTimeline(tx, current.report_id, `Report deleted: ${reason}`, actor);
        await recordEvent(tx, {
          type: 'report.deleted', actor, correlationId: request.id, reportId: current.report_id, before: sealedPreImage(preImage), data: { reason }, isSupervisor: current.is_supervisor,
        });
        return { report_id: current.report_id, deleted_at };
      });
      return { success: true as const, deleted };
    },
  );

  // Compatibility no-ops: the dashboard still calls them. They touch no data, so an unknown
  // report id is 200 too (answering 404 would need a read these calls never needed).
  for (const [path, operationId] of [['/reports/:report_id/viewed', 'markReportViewed'], ['/reports/:report_id/evidence/opened', 'markEvidenceOpened']] as const) {
    app.post(
      path,
      {
        config: { auth: 'either', permission: 'view_dashboard' },
        schema: { tags, operationId, summary: 'No-op kept for compatibility', params: ReportParams, response: { 200: Ok, ...errorResponses(400, ...COMMON_ERRORS) } },
      },
      async () => ({ success: true as const }),
    );
  }

  app.post(
    '/reports/:report_id/chat-profiles',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        operationId: 'storeChatProfiles',
        summary: "The bot delivers the parties' chat profiles (upserted by chat id)",
        params: ReportParams,
        body: ChatProfilesBody,
        response: { 200: ChatProfilesResult, ...errorResponses(400, 404, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { reporter, reportee, reported } = request.body;
      if (reportee && reported && reportee.chat_id !== reported.chat_id) {
        throw errors.validation('body.reportee and body.reported are the same party and must name the same chat_id');
      }
      const byChatId = new Map([reporter, reportee, reported].filter((p) => p !== undefined).map((p) => [p.chat_id, p]));
      if (byChatId.size === 0) throw errors.validation('body needs reporter, reportee or reported');
      const stored = await request.environment.db.transaction(async (tx) => {
        // Locked: a profile is stored for the report's parties as they are, not as an erasure
        // running beside it leaves them.
        const report = await findReport(tx, request.params.report_id, { forUpdate: true });
        if (!report) throw errors.notFound(`Report ${request.params.report_id}`);
        // Only the parties' own profiles: who sees a stored profile is decided by the reports that
        // name its chat id (report-access.ts), so one stored through a report that does not name it
        // (a mistaken id, or a party an erasure has pseudonymised) would escape that report's flag.
        for (const [slot, profile, party] of [['reporter', reporter, report.reporter], ['reportee', reportee, report.reported], ['reported', reported, report.reported]] as const) {
          if (profile && profile.chat_id !== party) throw errors.validation(`body.${slot}.chat_id is not the report's ${slot === 'reporter' ? 'reporter' : 'reported party'}`);
        }
        const rows = [];
        for (const profile of byChatId.values()) rows.push(await upsertChatProfile(tx, profile));
        return rows;
      });
      return { success: true as const, stored };
    },
  );
};

const STATUS_CHANGED = 'This action can no longer be performed because the case status changed';

/**
 * The PATCH change on the locked row: only fields whose value differs are written, and a body
 * that changes nothing writes nothing. Pending on an investigation concludes it; any other status
 * during an investigation is refused (the investigation routes own that state).
 */
async function applyReportUpdate(tx: Tx, current: ReportRow, body: UpdateBody, actor: Actor, correlationId: string): Promise<void> {
  const changes: ReportChanges = {};
  for (const [field, value] of Object.entries(body) as [keyof UpdateBody, string | boolean | null][]) {
    if (value !== current[field]) changes[field] = value;
  }
  const investigating = current.status === 'Under Investigation';
  if (body.status !== undefined && investigating && body.status !== 'Pending') throw errors.conflict(STATUS_CHANGED);
  if (changes.status !== undefined && investigating) changes.investigation_started_at = null;
  const fields = Object.keys(changes) as (keyof ReportChanges)[];
  if (fields.length === 0) return;

  const after = await updateReportFields(tx, current.report_id, changes);
  const before = Object.fromEntries(fields.map((f) => [f, current[f]]));
  const changed = Object.fromEntries(fields.map((f) => [f, after[f]]));
  const parts: string[] = [];
  if ('assigned_agent' in changes) {
    const { rows } = after.assigned_agent
      ? await tx.query<{ name: string | null }>('select name from agents where chat_id = $1::text', [after.assigned_agent])
      : { rows: [] };
    parts.push(after.assigned_agent ? `Assigned to ${rows[0]?.name ?? after.assigned_agent}` : 'Unassigned');
  }
  if ('status' in changes) {
    parts.push(`${investigating ? 'Investigation concluded: status' : 'Status'} changed from ${current.status} to ${after.status}`);
  }
  const others = fields.filter((f) => f !== 'assigned_agent' && f !== 'status' && f !== 'investigation_started_at');
  if (others.length > 0) parts.push(`Updated ${others.join(', ')}`);
  await addTimeline(tx, current.report_id, parts.join('; '), actor);
  const type = 'assigned_agent' in changes ? 'report.assigned' : 'status' in changes ? 'report.status_changed' : 'report.updated';
  await recordEvent(tx, {
    type, actor, correlationId, reportId: current.report_id, before, after: changed, isSupervisor: current.is_supervisor || after.is_supervisor,
  });
}
