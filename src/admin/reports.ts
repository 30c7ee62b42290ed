// Report search and correction for Directors (spec: GET /admin/reports, POST /admin/reports/<id>/correct).
// The search term is data: LIKE's wildcards and escape character are escaped and the value is a
// bound parameter; a trigram index over one immutable expression serves it (migration 0012).
// Corrections cover what a data-entry mistake leaves wrong: the parties, their names, the reason.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { errors } from '../platform/errors.js';
import { actorOf, readDb } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses, nullableString } from '../platform/http/schemas.js';
import type { Queryable } from '../platform/db/types.js';
import { addTimeline, findReport, updateReportFields, type ReportChanges, type ReportRow } from '../reports/queries.js';
import { ReportParams, ReportSchema } from '../reports/schemas.js';
import { AdminReason, CorrelationId } from './schemas.js';
import { lockAdmins, recordAdminChange } from './trail.js';

const tags = ['Administration'];
/** Spec Limits: GET /admin/reports answers at most 50 rows. */
const ADMIN_REPORTS_LIMIT = 50;
export const SEARCH_MAX_LENGTH = 200;

const AdminReportQuery = Type.Object(
  {
    search: Type.Optional(Type.String({ maxLength: SEARCH_MAX_LENGTH, description: 'Substring of the report id, reporter, reported, their names or the reason (case-insensitive)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ADMIN_REPORTS_LIMIT, default: ADMIN_REPORTS_LIMIT })),
  },
  { additionalProperties: false },
);

const AdminReportRow = Type.Pick(ReportSchema, [
  'report_id', 'status', 'reporter', 'reported', 'reporter_name', 'reported_name', 'reason', 'assigned_agent', 'is_supervisor', 'created_at', 'updated_at',
]);
type AdminReportRow = Static<typeof AdminReportRow>;

const AdminReportList = Type.Object({ success: Type.Literal(true), reports: Type.Array(AdminReportRow, { description: 'Newest first, at most 50' }) });

const CorrectionFields = Type.Object(
  {
    reporter: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' })),
    reported: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' })),
    reporter_name: Type.Optional(nullableString({ maxLength: 100 })),
    reported_name: Type.Optional(nullableString({ maxLength: 100 })),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, pattern: '\\S' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
const CorrectBody = Type.Object({ fields: CorrectionFields, reason: AdminReason }, { additionalProperties: false });
const CorrectAnswer = Type.Object({
  success: Type.Literal(true),
  report: ReportSchema,
  changed: Type.Array(Type.String(), { description: 'The fields whose value changed (empty: nothing was written)' }),
  correlation_id: Type.Union([CorrelationId, Type.Null()], { description: 'Null when nothing changed' }),
});

/** `%`, `_` and `\` match themselves: the caller's text is never LIKE syntax. */
export const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const SEARCH_EXPRESSION = 'report_search_text(report_id, reporter, reported, reporter_name, reported_name, reason)';
const ROW_COLUMNS = 'report_id, status, reporter, reported, reporter_name, reported_name, reason, assigned_agent, is_supervisor, created_at, updated_at';

async function searchReports(db: Queryable, search: string, limit: number): Promise<AdminReportRow[]> {
  const term = search.trim().toLowerCase();
  const { rows } = term
    ? await db.query<AdminReportRow>(
        `select ${ROW_COLUMNS} from reports where ${SEARCH_EXPRESSION} like $1::text escape '\\'
         order by created_at desc, creation_order desc limit $2::int`,
        [`%${likeLiteral(term)}%`, limit],
      )
    : await db.query<AdminReportRow>(`select ${ROW_COLUMNS} from reports order by created_at desc, creation_order desc limit $1::int`, [limit]);
  return rows;
}

export const adminReportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/reports',
    {
      config: { auth: 'session', admin: 'admin_reports' },
      schema: { tags, operationId: 'searchReports', summary: 'Read-only report search (Director), newest first, at most 50', querystring: AdminReportQuery, response: { 200: AdminReportList, ...errorResponses(400, ...COMMON_ERRORS) } },
    },
    async (request) => ({
      success: true as const,
      reports: await searchReports(readDb(request), request.query.search ?? '', request.query.limit ?? ADMIN_REPORTS_LIMIT),
    }),
  );

  app.post(
    '/admin/reports/:report_id/correct',
    {
      config: { auth: 'session', admin: 'admin_reports' },
      schema: {
        tags,
        operationId: 'correctReport',
        summary: 'Correct a data-entry mistake on a report (reporter, reported, their names, reason), with a reason',
        params: ReportParams,
        body: CorrectBody,
        response: { 200: CorrectAnswer, ...errorResponses(400, 404, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const reportId = request.params.report_id;
      const { fields, reason } = request.body;
      return request.environment.db.transaction(async (tx) => {
        await lockAdmins(tx, request, 'admin_reports');
        const before = await findReport(tx, reportId, { forUpdate: true });
        if (!before) throw errors.notFound(`Report ${reportId}`);
        const changed = (Object.keys(fields) as (keyof typeof fields & keyof ReportRow)[]).filter((f) => fields[f] !== before[f]);
        if (changed.length === 0) return { success: true as const, report: before, changed, correlation_id: null };
        const after = await updateReportFields(tx, reportId, Object.fromEntries(changed.map((f) => [f, fields[f] ?? null])) as ReportChanges);
        await addTimeline(tx, reportId, `Corrected by an administrator (${changed.join(', ')}): ${reason}`, actorOf(request));
        const correlationId = await recordAdminChange(tx, request, {
          action: 'admin.report_corrected',
          target: reportId,
          reason,
          before: Object.fromEntries(changed.map((f) => [f, before[f]])),
          after: Object.fromEntries(changed.map((f) => [f, after[f]])),
          reportId,
          isSupervisor: before.is_supervisor || after.is_supervisor,
        });
        return { success: true as const, report: after, changed, correlation_id: correlationId };
      });
    },
  );
};
