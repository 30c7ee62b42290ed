// GET /reports: the legacy full list and the paginated list. Filters, sorting, totals and counts
// are all SQL over the indexes of migrations/0004_reports.sql; JavaScript only shapes the rows.
import type { Queryable } from '../platform/db/types.js';
import { reportColumns, type ReportRow, type ReportStatus } from './queries.js';

export type ReportSort = 'newest' | 'oldest' | 'updated';

const ORDER: Record<ReportSort, string> = {
  newest: 'r.created_at desc, r.report_id desc',
  oldest: 'r.created_at asc, r.report_id asc',
  updated: 'r.updated_at desc, r.report_id desc',
};

export interface RestrictedReport {
  report_id: string;
  is_supervisor: true;
  restricted: true;
  status: ReportStatus;
  created_at: string;
  updated_at: string;
}

/** Callers below supervisor rank learn that a flagged report exists, and nothing about its content. */
export function redact(rows: ReportRow[], maySeeSupervisor: boolean): (ReportRow | RestrictedReport)[] {
  if (maySeeSupervisor) return rows;
  return rows.map((r) =>
    r.is_supervisor
      ? { report_id: r.report_id, is_supervisor: true, restricted: true, status: r.status, created_at: r.created_at, updated_at: r.updated_at }
      : r,
  );
}

/** Legacy full fetch: every report, newest first. */
export async function listAllReports(db: Queryable, status?: ReportStatus): Promise<ReportRow[]> {
  const { rows } = await db.query<ReportRow>(
    `select ${reportColumns('r')} from reports r where ($1::text is null or r.status = $1::text) order by ${ORDER.newest}`,
    [status ?? null],
  );
  return rows;
}

export interface ReportPageQuery {
  limit: number;
  offset: number;
  statuses?: ReportStatus[] | undefined;
  type?: 'operator' | 'supervisor' | undefined;
  contactOpen?: boolean | undefined;
  sort?: ReportSort | undefined;
}

export interface ReportPage {
  rows: ReportRow[];
  total: number;
  counts: { operator: number; supervisor: number };
}

// $1 statuses (null: any), $2 contact_open (null: any). The type filter ($3) is kept apart so the
// per-type counts can ignore it: they are the sizes of the operator and supervisor tabs. The same
// filters apply to the rows (r) and to report_counts (c), whose columns have the same names.
const sharedFilters = (t: string) => `($1::text[] is null or ${t}.status = any($1::text[]))
  and ($2::boolean is null or ${t}.contact_open = $2::boolean)`;
const typeFilter = (t: string) => `($3::boolean is null or ${t}.is_supervisor = $3::boolean)`;

export async function listReportPage(db: Queryable, query: ReportPageQuery): Promise<ReportPage> {
  const params = [query.statuses ?? null, query.contactOpen ?? null, query.type === undefined ? null : query.type === 'supervisor'];
  const [page, totals] = await Promise.all([
    db.query<ReportRow>(
      `select ${reportColumns('r')} from reports r where ${sharedFilters('r')} and ${typeFilter('r')}
       order by ${ORDER[query.sort ?? 'newest']} limit $4::integer offset $5::integer`,
      [...params, query.limit, query.offset],
    ),
    // Totals come from the counters that triggers keep (migration 0007), not from counting rows.
    db.query<{ total: number; operator: number; supervisor: number }>(
      `select coalesce(sum(c.n) filter (where ${typeFilter('c')}), 0)::integer as total,
              coalesce(sum(c.n) filter (where not c.is_supervisor), 0)::integer as operator,
              coalesce(sum(c.n) filter (where c.is_supervisor), 0)::integer as supervisor
       from report_counts c where ${sharedFilters('c')}`,
      params,
    ),
  ]);
  const t = totals.rows[0] ?? { total: 0, operator: 0, supervisor: 0 };
  return { rows: page.rows, total: t.total, counts: { operator: t.operator, supervisor: t.supervisor } };
}
