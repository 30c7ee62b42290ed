// The evidence list (spec: Evidence list): every evidence row, newest first, with a light summary
// of its report and the submitter's name, all from one statement whatever the number of rows.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { seesFlaggedReports } from '../platform/auth/report-access.js';
import type { Queryable } from '../platform/db/types.js';
import { COMMON_ERRORS, errorResponses, nullableString, timestamp } from '../platform/http/schemas.js';
import { REPORT_STATUSES, type ReportStatus } from '../reports/queries.js';

const ReportSummary = Type.Object({
  report_id: Type.String(),
  status: Type.Unsafe<ReportStatus>({ type: 'string', enum: [...REPORT_STATUSES] }),
  reported: Type.String(),
  reported_name: nullableString(),
  is_supervisor: Type.Boolean(),
});

const EvidenceItem = Type.Object({
  id: Type.Integer(),
  report_id: Type.String(),
  description: Type.String(),
  url: Type.String(),
  submitted_by: nullableString(),
  submitted_by_id: nullableString({ description: 'Chat id of the submitting agent' }),
  submitted_by_name: nullableString({ description: "The submitting agent's name, when known" }),
  created_at: timestamp(),
  report: ReportSummary,
});

const EvidenceList = Type.Object({ success: Type.Literal(true), evidence: Type.Array(EvidenceItem) });

export interface EvidenceItem {
  id: number;
  report_id: string;
  description: string;
  url: string;
  submitted_by: string | null;
  submitted_by_id: string | null;
  submitted_by_name: string | null;
  created_at: string;
  report: { report_id: string; status: ReportStatus; reported: string; reported_name: string | null; is_supervisor: boolean };
}

/** Evidence of reports flagged now (the joined row) is left out unless `includeSupervisor`. */
export async function listEvidence(db: Queryable, includeSupervisor: boolean): Promise<EvidenceItem[]> {
  const { rows } = await db.query<EvidenceItem>(
    `select e.id, e.report_id, e.description, e.url, e.submitted_by, e.submitted_by as submitted_by_id,
            a.name as submitted_by_name, e.created_at,
            jsonb_build_object('report_id', r.report_id, 'status', r.status, 'reported', r.reported,
                               'reported_name', r.reported_name, 'is_supervisor', r.is_supervisor) as report
     from report_evidence e
     join reports r on r.report_id = e.report_id
     left join agents a on a.chat_id = e.submitted_by
     where $1::boolean or not r.is_supervisor
     order by e.created_at desc, e.id desc`,
    [includeSupervisor],
  );
  return rows;
}

export const evidenceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/evidence',
    {
      config: { auth: 'either', permission: 'view_dashboard' },
      schema: { tags: ['Evidence'], operationId: 'listEvidence', summary: 'All evidence, newest first, with a summary of each report', response: { 200: EvidenceList, ...errorResponses(...COMMON_ERRORS) } },
    },
    async (request) => {
      return { success: true as const, evidence: await listEvidence(request.environment.db, seesFlaggedReports(request.principal)) };
    },
  );
};
