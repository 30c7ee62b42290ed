// GET /audit reads the canonical events table. Every filter, the search, the sort and the page
// are SQL: a case id is found through the events' report id index, other text through the
// trigram-indexed search_text column of migration 0005.
import { anyReportFlaggedSql, countingActionSql, eventReportIds, lookupWithheldSql, seesFlaggedReports, shownAfterSql, shownLookupSql, visibleToSql, withholdsCounts } from '../platform/auth/report-access.js';
import type { Queryable } from '../platform/db/types.js';
import type { Principal } from '../platform/auth/principal.js';
import type { EventRecord } from '../platform/events.js';
import { AUDIT_TOTAL_CAP, type AuditSort } from './schemas.js';

export interface AuditFilter {
  search?: string | undefined;
  /**
   * The report ids the search term names (the term as typed, or upper-cased), when it is a case id
   * that has events: the search is then those reports' events (see findCaseIds).
   */
  caseIds?: string[] | undefined;
  /** Substrings of the event type, any of which matches. */
  events: string[];
  reportId?: string | undefined;
  supervisor?: 'only' | 'exclude' | undefined;
  /** Who asks: events about reports they may not see are out whatever else is asked. */
  principal: Principal | null;
  sort: AuditSort;
  limit: number;
  offset: number;
}

// Each matches an index of migration 0005 (or events_created_at_idx); id breaks ties so pages
// never overlap.
const ORDER: Record<AuditSort, string> = {
  newest: 'created_at desc, id desc',
  oldest: 'created_at, id',
  event: 'type, created_at desc, id desc',
  by: 'actor_name nulls last, created_at desc, id desc',
  report: 'report_id nulls last, created_at desc, id desc',
};

/** The user's term taken literally inside LIKE (backslash is PostgreSQL's default escape). */
export const escapeLike = (term: string) => term.replace(/[\\%_]/g, '\\$&');

/**
 * The part of a lower-cased search term the trigram index looks up; each candidate row is then
 * checked for the whole term. The index ANDs the posting lists of every trigram it is given, and
 * words found in nearly every event ("status", "report", an agent's first name) have posting lists
 * of nearly every row: one phrase of three such words read 4,000 index pages at a million events
 * where its number alone read 30. So the lookup takes one word: the longest containing a digit
 * (numbers and identifiers are the rare words of an audit log), else the longest. A term of one
 * word, or whose words are all shorter than a trigram, is looked up whole.
 */
export function indexProbe(term: string): string {
  const words = term.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 3);
  if (words.length < 2) return term;
  const rank = (w: string) => (/\p{N}/u.test(w) ? 1_000 : 0) + w.length;
  return words.reduce((best, w) => (rank(w) > rank(best) ? w : best));
}

/**
 * An event is a supervisor event while any report it is about is flagged now: decided at read time,
 * never by the flag the row was written with (its is_supervisor column is history, not a rule).
 */
// Qualified: inside the predicate's subqueries a bare report_id would be the report's own.
const EVENT_REPORT_IDS = eventReportIds('events');
const eventFlagged = anyReportFlaggedSql(EVENT_REPORT_IDS);

/** Those below supervisor rank are shown no event of a flagged report: theirs are all false, unprobed. */
const shownFlag = (principal: Principal | null) => (visibleToSql(principal, EVENT_REPORT_IDS) === 'true' ? eventFlagged : 'false');

interface Where {
  /** What the search asks for. */
  match: string[];
  /**
   * The rows the caller may not see, those a search matches only by what they do not show, and
   * the supervisor filter's exclusion: each hides a few.
   */
  hide: string[];
  /** The supervisor filter's "only": keeps a few. */
  keep: string[];
  values: unknown[];
}

/**
 * A user lookup's event, and who asked for the lookup (a lookup's events are the bot's). False,
 * never null, for an event without a kind (most of them): `null and (select ...)` has to run the
 * subquery to decide, a probe of discipline_deliveries for every row of a search.
 */
const IS_LOOKUP = "coalesce(data ->> 'kind' = 'user_lookup', false)";
const LOOKUP_ASKER = `(select dd.requested_by from discipline_deliveries dd where dd.item_id = (data ->> 'item_id')::bigint)`;
/** The data column as the caller is shown it: a lookup's without its person unless they asked for it. */
const shownDataSql = (principal: Principal | null) => shownLookupSql(principal, IS_LOOKUP, LOOKUP_ASKER, 'data', "data - 'user_id'");

/** events.search_text (migration 0005) of the row as the caller is shown it (shownColumns). */
const shownSearchText = (principal: Principal | null) =>
  `lower(type || ' ' || coalesce(report_id, '') || ' ' || coalesce(actor_name, '') || ' ' || coalesce(before::text, '') || ' '
     || coalesce((${shownAfterSql(principal, 'type', 'after')})::text, '') || ' ' || coalesce((${shownDataSql(principal)})::text, ''))`;

/**
 * SQL: the row is shown with less than it stores (shownColumns), so that a search must match it by
 * what it shows: a subject's export or erasure without its counts, a lookup without its person.
 */
const shownLessSql = (principal: Principal | null) => `(${countingActionSql('type')} or ${lookupWithheldSql(principal, IS_LOOKUP, LOOKUP_ASKER)})`;

const whereOf = (conditions: readonly string[]) => (conditions.length > 0 ? `where ${conditions.join(' and ')}` : '');

function whereClause(filter: AuditFilter): Where {
  const match: string[] = [];
  const hide: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  if (filter.caseIds) match.push(`report_id = any(${caseIdsOf(param(filter.caseIds), preparedCasePage(filter))})`);
  else if (filter.search) {
    const term = filter.search.toLowerCase();
    const probe = indexProbe(term);
    if (probe === term) match.push(`search_text like '%' || ${param(escapeLike(term))}::text || '%'`);
    else match.push(`search_text like '%' || ${param(escapeLike(probe))}::text || '%' and strpos(search_text, ${param(term)}::text) > 0`);
    // A row shown with less than it stores matches a search only by what it shows (as a
    // placeholder matches filters: docs/access.md). With the hidden rows, not the match: a few
    // rows it keeps out, and among the match its estimate made the planner read whole trigram
    // posting lists.
    if (withholdsCounts(filter.principal)) {
      hide.push(`case when ${shownLessSql(filter.principal)} then strpos(${shownSearchText(filter.principal)}, ${param(term)}::text) > 0 else true end`);
    }
  }
  if (filter.events.length > 0) {
    match.push(`lower(type) like any (${param(filter.events.map((e) => `%${escapeLike(e.toLowerCase())}%`))}::text[])`);
  }
  if (filter.reportId !== undefined) match.push(`report_id = ${param(filter.reportId)}::text`);
  const visible = visibleToSql(filter.principal, EVENT_REPORT_IDS);
  if (visible !== 'true') hide.push(visible);
  // Excluding is what everyone below supervisor rank gets: the same probes.
  if (filter.supervisor === 'exclude') hide.push(visibleToSql(null, EVENT_REPORT_IDS));
  const keep = filter.supervisor === 'only' ? [eventFlagged] : [];
  return { match, hide, keep, values };
}

/**
 * Whether the page is the one statement of a case-id search that hides nothing (the caller sees
 * every report), prepared by name per shape (casePage). A case id is found through an index
 * whatever its value, so one plan serves them all; planned each time, this statement cost more
 * than it ran: its flag probe (shownFlag) plans a subquery over reports and its 17 indexes for
 * every page (issue 38: the key's case-id search at 0.53 to 0.71 of the build before the model).
 */
const preparedCasePage = (filter: AuditFilter) => filter.caseIds !== undefined && seesFlaggedReports(filter.principal) && filter.supervisor !== 'exclude';

/**
 * The case ids' array. Prepared, through an InitPlan: PostgreSQL keeps a statement's generic plan
 * (planned once) only when it costs no more than its custom plans, and a constant array of one or
 * two ids costs less than the ten a parameter is guessed at, so the statement would be planned
 * again at every run; behind an InitPlan the custom plans see no constant either.
 */
const caseIdsOf = (param: string, prepared: boolean) => (prepared ? `(select ${param}::text[])::text[]` : `${param}::text[]`);

/**
 * The prepared case-id page of the filter's shape, its text built once: the text depends on the
 * shape alone (the sort, which filters are given), never on their values.
 */
const casePages = new Map<string, { name: string; text: string }>();
function casePage(filter: AuditFilter, build: () => string): { name: string; text: string } {
  const shape = `${filter.sort}|${filter.events.length > 0}|${filter.reportId !== undefined}|${filter.supervisor ?? ''}`;
  let page = casePages.get(shape);
  if (page === undefined) casePages.set(shape, (page = { name: `audit_case_page_${casePages.size + 1}`, text: build() }));
  return page;
}

/** Report ids are at most this long (the events' report_id as the API accepts it). */
const REPORT_ID_MAX = 64;

/**
 * The report ids a search term names: itself and its upper-cased form (case ids are upper case,
 * the search is case-insensitive), those that have events. An empty answer means free text.
 */
export async function findCaseIds(db: Queryable, term: string): Promise<string[]> {
  if (term.length > REPORT_ID_MAX || /\s/.test(term)) return [];
  const { rows } = await db.query<{ report_id: string }>(
    `select id.report_id from unnest($1::text[]) as id(report_id)
     where exists (select 1 from events e where e.report_id = id.report_id)`,
    [[...new Set([term, term.toUpperCase()])]],
    { name: 'audit_case_ids' },
  );
  return rows.map((r) => r.report_id);
}

export interface EventSearchResult {
  total: number;
  /** More than AUDIT_TOTAL_CAP events match; `total` is the cap. */
  totalCapped: boolean;
  events: EventRecord[];
}

/**
 * The page first, then the count only when the page cannot tell it: a page shorter than the limit
 * that starts at the first match (offset 0) or holds any match is the end of the matches, so the
 * total is its offset plus its rows, exactly. A search for a case id or a rare term (a number, an
 * id) ends on its first page, and is then one statement instead of two: on 10M events the count
 * of a number read the same trigram posting lists as the page again (docs/performance.md, data growth).
 */
export async function searchEvents(db: Queryable, filter: AuditFilter): Promise<EventSearchResult> {
  const where = whereClause(filter);
  const all = whereOf([...where.match, ...where.hide, ...where.keep]);
  const n = where.values.length;
  const text = () => `select ${shownColumns(filter.principal)}, ${shownFlag(filter.principal)} as is_supervisor, created_at
       from (select ${COLUMNS}, created_at from events ${all} order by ${ORDER[filter.sort]} limit $${n + 1}::int offset $${n + 2}::int) events
       order by ${ORDER[filter.sort]}`;
  const values = [...where.values, filter.limit, filter.offset];
  const prepared = preparedCasePage(filter) ? casePage(filter, text) : undefined;
  const page = (where.hide.length > 0 && where.keep.length === 0 ? await pageOfCandidates(db, filter, where) : undefined) ??
    (await db.query<EventRecord>(prepared?.text ?? text(), values, prepared && { name: prepared.name })).rows;
  const ended = page.length < filter.limit && (page.length > 0 || filter.offset === 0);
  const total = ended
    ? filter.offset + page.length
    : ((where.hide.length > 0 && where.keep.length === 0 ? await countOfCandidates(db, where) : undefined) ??
      (
        await db.query<{ total: number }>(`select count(*)::int as total from (select 1 from events ${all} limit $${n + 1}::int) matched`, [
          ...where.values,
          AUDIT_TOTAL_CAP + 1,
        ])
      ).rows[0]?.total ??
      0);
  return { total: Math.min(total, AUDIT_TOTAL_CAP), totalCapped: total > AUDIT_TOTAL_CAP, events: page };
}

const columns = (after: string, data = 'data') => `id, type, actor_kind, actor_chat_id, actor_name, report_id, before, ${after}, ${data}, correlation_id`;
const COLUMNS = columns('after');
/**
 * The columns as the caller is shown them: below supervisor rank a subject's export or erasure
 * without its counts, and a user lookup's events without its person unless the caller asked for it.
 */
const shownColumns = (principal: Principal | null) => columns(`${shownAfterSql(principal, 'type', 'after')} as after`, `${shownDataSql(principal)} as data`);

/**
 * The page of a search whose conditions hide a few rows (the events of flagged reports, for those
 * below supervisor rank): the matches are taken in order up to the page's end and a quarter more
 * (the candidates), and only they are probed, instead of every match before the sort (a bare number
 * matches hundreds of events, a page shows 20 to 100). The page is exact when it is full or the
 * candidates were every match; otherwise undefined, and the caller runs the one-statement form.
 */
async function pageOfCandidates(db: Queryable, filter: AuditFilter, where: Where): Promise<EventRecord[] | undefined> {
  const end = filter.offset + filter.limit;
  const size = end + Math.ceil(end / 4) + 20;
  const n = where.values.length;
  const { rows } = await db.query<EventRecord & { candidates: number }>(
    `with candidates as materialized (
       select ${COLUMNS}, created_at from events ${whereOf(where.match)} order by ${ORDER[filter.sort]} limit $${n + 1}::int)
     select ${shownColumns(filter.principal)}, false as is_supervisor, created_at, (select count(*) from candidates)::int as candidates
     from candidates events ${whereOf(where.hide)}
     order by ${ORDER[filter.sort]} limit $${n + 2}::int offset $${n + 3}::int`,
    [...where.values, size, filter.limit, filter.offset],
  );
  if (rows.length < filter.limit && (rows.length === 0 || rows[0]!.candidates === size)) return undefined;
  return rows.map(({ candidates: _candidates, ...event }) => event);
}

/**
 * The count of a search whose conditions hide a few rows, as its page is taken (pageOfCandidates):
 * the first matches in any order up to the cap and a quarter more, and only they are probed.
 * Counted in one statement with the probes, the anti-joins' estimates made the planner read a
 * common word's whole trigram posting list (170,000 rows, 40 ms at a million events) where a
 * scan stops at the cap's thousandth match (4 ms). The candidates are a subquery with a limit,
 * which the planner keeps apart as a materialized CTE was kept, without copying their columns
 * (before, after and data) into a tuplestore first: the probes run as a filter of the one count.
 * Exact when the candidates were every match or hold more than the cap's visible rows; otherwise
 * undefined, and the caller counts in one statement.
 */
async function countOfCandidates(db: Queryable, where: Where): Promise<number | undefined> {
  const cap = AUDIT_TOTAL_CAP + 1;
  const size = cap + Math.ceil(cap / 4) + 20;
  const { rows } = await db.query<{ visible: number; candidates: number }>(
    `select count(*) filter (where ${where.hide.join(' and ')})::int as visible, count(*)::int as candidates
       from (select type, report_id, actor_name, before, after, data from events ${whereOf(where.match)} limit $${where.values.length + 1}::int) events`,
    [...where.values, size],
  );
  const { visible = 0, candidates = 0 } = rows[0] ?? {};
  return candidates < size || visible >= cap ? visible : undefined;
}

/** Chat ids (snowflakes: runs of 15 to 20 digits) never appear in an audit text. */
export const scrubIds = (text: string) => text.replace(/(?<!\d)\d{15,20}(?!\d)/g, '[id]');

const asObject = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

const shown = (value: unknown) => (value === undefined || value === null ? 'none' : typeof value === 'string' ? value : JSON.stringify(value));

function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  return Object.keys(after).filter((key) => key !== 'updated_at' && JSON.stringify(before[key]) !== JSON.stringify(after[key]));
}

/** A one-line, human-readable account of an event, with identifiers scrubbed. */
export function describeEvent(event: EventRecord): string {
  const who =
    event.actor_name ?? (event.actor_kind === 'bot' ? 'Automation bot' : event.actor_kind === 'system' ? 'System' : `Agent ${event.actor_chat_id ?? ''}`);
  const report = event.report_id ? `report ${event.report_id}` : 'a report';
  const on = event.report_id ? ` on report ${event.report_id}` : '';
  const before = asObject(event.before);
  const after = asObject(event.after);
  const data = asObject(event.data);
  let text: string;
  switch (event.type) {
    case 'report.created':
      text = `${who} created ${report}`;
      break;
    case 'report.status_changed':
      text = `${who} changed ${report} status from ${shown(before.status)} to ${shown(after.status)}`;
      break;
    case 'report.assigned': {
      const to = after.assigned_agent_name ?? after.assigned_agent;
      text = to === undefined || to === null ? `${who} unassigned ${report}` : `${who} assigned ${report} to ${shown(to)}`;
      break;
    }
    case 'report.updated': {
      const fields = changedFields(before, after);
      text = `${who} updated ${report}${fields.length > 0 ? ` (${fields.join(', ')})` : ''}`;
      break;
    }
    case 'report.deleted':
      text = `${who} deleted ${report}`;
      break;
    case 'report.note_added':
      text = `${who} added a note to ${report}`;
      break;
    case 'report.timeline_entry_added':
      text = `${who} added a timeline entry to ${report}`;
      break;
    case 'contact.message_added':
      text = data.direction === 'from_reporter' ? `The reporter responded${on} (relayed by ${who})` : `${who} messaged the reporter${on}`;
      break;
    case 'contact.thread_closed':
      text = `${who} closed the contact thread${on}`;
      break;
    default:
      text = `${who}: ${event.type.replace(/[._]/g, ' ').toLowerCase()}${on}`;
  }
  return scrubIds(text);
}
