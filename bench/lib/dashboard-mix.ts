// The dashboard's read mix, shared by the scenarios that load the service as a dashboard does
// (reports-at-scale, soak): list pages over varied offsets, filters and sorts; random reports;
// audit searches for random case ids and phrases found in the generated events
// (bench/lib/generate-data.ts). Every call draws a new request.
import type { ReportPageQuery, ReportSort } from '../../src/reports/list.js';
import { REPORT_STATUSES, type ReportStatus } from '../../src/reports/queries.js';

// --- The dashboard's list mix (GET /reports) ---
export const LIMIT = 50;
/** Offset 0 this often; pages 2 to NEAR_PAGES this often; otherwise a page up to DEEP_PAGES. */
const FIRST_PAGE_SHARE = 0.7;
const NEAR_PAGE_SHARE = 0.25;
const NEAR_PAGES = 20;
const DEEP_PAGES = 200;
/** A random non-empty subset of the statuses this often; a type (operator or supervisor, even odds) this often. */
const STATUSES_SHARE = 0.5;
const TYPE_SHARE = 0.3;
const SORTS: readonly ReportSort[] = ['newest', 'oldest', 'updated'];

// --- The audit search: case ids, and phrases the generated events contain (bench/lib/generate-data.ts) ---
/** "footage batch <n>" (each event's note; n up to the row count: one event matches, 11 for one n in 10) this often, an agent's name this often, else an event type. */
const PHRASE_BATCH_SHARE = 0.6;
const PHRASE_AGENT_SHARE = 0.25;
export const AGENTS = ['Morgan Hale', 'Riley Castellano', 'Jordan Pike', 'Avery Lindqvist', 'Casey Moreau', 'Drew Nakamura', 'Elliot Varga', 'Kai Brennan'];
export const EVENT_TYPES = ['report.status_changed', 'report.assigned', 'report.note_added', 'contact.message_added', 'report.updated'];

export const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
export const pick = <T>(xs: readonly T[]): T => xs[random(0, xs.length - 1)]!;
export const reportId = (rows: number) => `BENCH-${String(random(1, rows)).padStart(8, '0')}`;

export function randomListQuery(): ReportPageQuery {
  const r = Math.random();
  const page = r < FIRST_PAGE_SHARE ? 1 : r < FIRST_PAGE_SHARE + NEAR_PAGE_SHARE ? random(2, NEAR_PAGES) : random(NEAR_PAGES + 1, DEEP_PAGES);
  let statuses: ReportStatus[] | undefined;
  if (Math.random() < STATUSES_SHARE) {
    do statuses = REPORT_STATUSES.filter(() => Math.random() < 0.5);
    while (statuses.length === 0);
  }
  const type = Math.random() < TYPE_SHARE ? pick(['operator', 'supervisor'] as const) : undefined;
  return { limit: LIMIT, offset: (page - 1) * LIMIT, statuses, type, sort: pick(SORTS) };
}

export function listPath(q: ReportPageQuery): string {
  const statuses = q.statuses ? `&statuses=${encodeURIComponent(q.statuses.join(','))}` : '';
  return `/reports?limit=${q.limit}&offset=${q.offset}&sort=${q.sort}${statuses}${q.type ? `&type=${q.type}` : ''}`;
}

export function randomPhrase(rows: number): string {
  const r = Math.random();
  if (r < PHRASE_BATCH_SHARE) return `footage batch ${random(1, rows)}`;
  return r < PHRASE_BATCH_SHARE + PHRASE_AGENT_SHARE ? pick(AGENTS) : pick(EVENT_TYPES);
}

export const auditPath = (search: string) => `/audit?search=${encodeURIComponent(search)}&limit=${LIMIT}`;
