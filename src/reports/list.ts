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

/**
 * The page's two statements for one filter shape (which filters are present, the sort), with only
 * the predicates and parameters that apply: a catch-all predicate (`$1 is null or …`) costs a
 * fresh plan per call and hides the filter from the planner. Each shape is prepared by name once
 * per connection. The page is a deferred join: its keys are found first (an index-ordered walk
 * over the sort and filter columns), then the 50 rows are fetched by key.
 */
interface PageStatements {
  name: string;
  page: string;
  totals: string;
  /** The present filters' values, in parameter order. */
  values: (query: ReportPageQuery) => unknown[];
}

const shapes = new Map<string, PageStatements>();

function pageStatements(query: ReportPageQuery): PageStatements {
  const sort = query.sort ?? 'newest';
  const filters = [
    query.statuses !== undefined && { column: 'status', cast: 'text[]', any: true, value: (q: ReportPageQuery) => q.statuses, tab: false },
    query.contactOpen !== undefined && { column: 'contact_open', cast: 'boolean', any: false, value: (q: ReportPageQuery) => q.contactOpen, tab: false },
    // The type filter is left out of the per-type counts: they are the sizes of the two tabs.
    query.type !== undefined && { column: 'is_supervisor', cast: 'boolean', any: false, value: (q: ReportPageQuery) => q.type === 'supervisor', tab: true },
  ].filter((f) => f !== false);
  const key = `${sort}_${filters.map((f) => f.column).join('_') || 'all'}`;
  let found = shapes.get(key);
  if (found) return found;
  const predicate = (t: string, f: (typeof filters)[number], i: number) => (f.any ? `${t}.${f.column} = any($${i + 1}::${f.cast})` : `${t}.${f.column} = $${i + 1}::${f.cast}`);
  const rowWhere = filters.map((f, i) => predicate('r', f, i));
  const countWhere = filters.flatMap((f, i) => (f.tab ? [] : [predicate('c', f, i)]));
  const typeIndex = filters.findIndex((f) => f.tab);
  const n = filters.length;
  found = {
    name: `report_page_${key}`,
    page: `select ${reportColumns('r')} from (
             select r.report_id from reports r ${rowWhere.length > 0 ? `where ${rowWhere.join(' and ')}` : ''}
             order by ${ORDER[sort]} limit $${n + 1}::integer offset $${n + 2}::integer
           ) k join reports r on r.report_id = k.report_id
           order by ${ORDER[sort]}`,
    // Totals come from the counters that triggers keep (migration 0007), not from counting rows.
    totals: `select coalesce(sum(c.n) filter (where ${typeIndex >= 0 ? predicate('c', filters[typeIndex]!, typeIndex) : 'true'}), 0)::integer as total,
                    coalesce(sum(c.n) filter (where not c.is_supervisor), 0)::integer as operator,
                    coalesce(sum(c.n) filter (where c.is_supervisor), 0)::integer as supervisor
             from report_counts c ${countWhere.length > 0 ? `where ${countWhere.join(' and ')}` : ''}`,
    values: (q) => filters.map((f) => f.value(q)),
  };
  shapes.set(key, found);
  return found;
}

export async function listReportPage(db: Queryable, query: ReportPageQuery): Promise<ReportPage> {
  const statements = pageStatements(query);
  const values = statements.values(query);
  const [page, totals] = await Promise.all([
    db.query<ReportRow>(statements.page, [...values, query.limit, query.offset], { name: `${statements.name}_rows` }),
    db.query<{ total: number; operator: number; supervisor: number }>(statements.totals, values, { name: `${statements.name}_totals` }),
  ]);
  const t = totals.rows[0] ?? { total: 0, operator: 0, supervisor: 0 };
  return { rows: page.rows, total: t.total, counts: { operator: t.operator, supervisor: t.supervisor } };
}
