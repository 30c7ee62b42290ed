// GET /reports: the legacy full list and the paginated list. Filters, sorting, totals and counts
// are all SQL over the indexes of migrations 0004, 0017 and 0018; JavaScript only shapes the rows.
import type { Queryable } from '../platform/db/types.js';
import { reportColumns, type ReportRow, type ReportStatus } from './queries.js';

export type ReportSort = 'newest' | 'oldest' | 'updated';

const SORT_KEY: Record<ReportSort, { column: 'created_at' | 'updated_at'; direction: 'asc' | 'desc' }> = {
  newest: { column: 'created_at', direction: 'desc' },
  oldest: { column: 'created_at', direction: 'asc' },
  updated: { column: 'updated_at', direction: 'desc' },
};

/**
 * The list's order over the columns of `table` (empty for the unqualified names of a subquery).
 * Reports sharing the timestamp follow creation order (migration 0019), never their ids.
 */
const orderBy = (sort: ReportSort, table = '') => {
  const { column, direction } = SORT_KEY[sort];
  const t = table ? `${table}.` : '';
  return `${t}${column} ${direction}, ${t}creation_order ${direction}`;
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
    `select ${reportColumns('r')} from reports r where ($1::text is null or r.status = $1::text) order by ${orderBy('newest', 'r')}`,
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

type Branch = { status: ReportStatus; is_supervisor: boolean; n: number };

/** One statement per shape, prepared by name on each connection (see listReportPage). */
interface Statement {
  name: string;
  text: string;
}
const statements = new Map<string, Statement>();
function statement(name: string, build: () => string): Statement {
  let found = statements.get(name);
  if (!found) statements.set(name, (found = { name, text: build() }));
  return found;
}

/**
 * The counters behind a page (migration 0007, kept by statement triggers since 0018), grouped by
 * status and type under the status and contact filters: the totals, the two tab sizes, and the
 * branches a filtered page merges. At most a dozen groups, read from a few hundred counter rows.
 */
async function countBranches(db: Queryable, query: ReportPageQuery): Promise<Branch[]> {
  const values = [query.statuses, query.contactOpen].filter((v) => v !== undefined);
  const filters = [query.statuses !== undefined && 'status = any($1::text[])', query.contactOpen !== undefined && `contact_open = $${values.length}::boolean`];
  const shape = `report_counts_${query.statuses !== undefined ? 's' : ''}${query.contactOpen !== undefined ? 'c' : ''}`;
  const { text, name } = statement(shape, () =>
    `select status, is_supervisor, sum(n)::integer as n from report_counts
     ${values.length > 0 ? `where ${filters.filter((f) => f !== false).join(' and ')}` : ''}
     group by status, is_supervisor having sum(n) > 0`,
  );
  return (await db.query<Branch>(text, values, { name })).rows;
}

/**
 * The keys of one page, in the list's order. With a status filter, the page merges one walk per
 * (status, type) that has reports, each in the list's order over its own index and stopping at
 * offset + limit keys: a filter matching a few reports reads a few keys, wherever the page is.
 * Without one, the walk goes down the sort index (over one type when the type filter is given),
 * which every report matches but the contact filter, checked inside the index.
 */
function pageKeys(query: ReportPageQuery, branches: Branch[]): { sql: string; values: unknown[]; shape: string } {
  const sort = query.sort ?? 'newest';
  const { column } = SORT_KEY[sort];
  const values: unknown[] = [];
  const param = (value: unknown, cast: string) => {
    values.push(value);
    return `$${values.length}::${cast}`;
  };
  const contact = query.contactOpen;
  if (query.statuses !== undefined) {
    const window = param(query.offset + query.limit, 'integer');
    const legs = branches.map(
      (b) => `(select report_id, ${column}, creation_order from reports
               where status = ${param(b.status, 'text')} and is_supervisor = ${param(b.is_supervisor, 'boolean')}
               ${contact === undefined ? '' : `and contact_open = ${param(contact, 'boolean')}`}
               order by ${orderBy(sort)} limit ${window})`,
    );
    return {
      sql: `select report_id, ${column}, creation_order from (${legs.join(' union all ')}) branches
            order by ${orderBy(sort)} limit ${param(query.limit, 'integer')} offset ${param(query.offset, 'integer')}`,
      values,
      shape: `${sort}_merge${branches.length}${contact === undefined ? '' : '_c'}`,
    };
  }
  const where = [
    query.type === undefined ? undefined : `is_supervisor = ${param(query.type === 'supervisor', 'boolean')}`,
    contact === undefined ? undefined : `contact_open = ${param(contact, 'boolean')}`,
  ].filter((w) => w !== undefined);
  return {
    sql: `select report_id, ${column}, creation_order from reports ${where.length > 0 ? `where ${where.join(' and ')}` : ''}
          order by ${orderBy(sort)} limit ${param(query.limit, 'integer')} offset ${param(query.offset, 'integer')}`,
    values,
    shape: `${sort}_walk${query.type === undefined ? '' : '_t'}${contact === undefined ? '' : '_c'}`,
  };
}

/**
 * A page: the counters first (they give the totals and tell which branches have reports, and a
 * page past the end costs nothing more), then the page's keys, then its rows fetched by key (a
 * deferred join: the walk reads only index entries). Each statement is one prepared statement per
 * filter shape, with only the predicates that apply: a catch-all predicate (`$1 is null or …`)
 * hides the filter from the planner and is planned afresh on every call.
 */
export async function listReportPage(db: Queryable, query: ReportPageQuery): Promise<ReportPage> {
  const groups = await countBranches(db, query);
  const counts = { operator: 0, supervisor: 0 };
  for (const g of groups) counts[g.is_supervisor ? 'supervisor' : 'operator'] += g.n;
  const wanted = query.type === undefined ? undefined : query.type === 'supervisor';
  const branches = groups.filter((g) => wanted === undefined || g.is_supervisor === wanted);
  const total = branches.reduce((sum, b) => sum + b.n, 0);
  if (query.offset >= total) return { rows: [], total, counts };
  const keys = pageKeys(query, branches);
  const sort = query.sort ?? 'newest';
  const { text, name } = statement(`report_page_${keys.shape}`, () =>
    `select ${reportColumns('r')} from reports r where r.report_id = any(array(select report_id from (${keys.sql}) k)) order by ${orderBy(sort, 'r')}`,
  );
  const { rows } = await db.query<ReportRow>(text, keys.values, { name });
  return { rows, total, counts };
}
