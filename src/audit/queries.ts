// GET /audit reads the canonical events table. Every filter, the search, the sort and the page
// are SQL (the search uses the trigram-indexed search_text column of migration 0005).
import type { Queryable } from '../platform/db/types.js';
import type { EventRecord } from '../platform/events.js';
import type { AuditSort } from './schemas.js';

export interface AuditFilter {
  search?: string | undefined;
  /** Substrings of the event type, any of which matches. */
  events: string[];
  reportId?: string | undefined;
  supervisor?: 'only' | 'exclude' | undefined;
  /** Callers below supervisor rank: supervisor events are out whatever else is asked. */
  hideSupervisor: boolean;
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

function whereClause(filter: AuditFilter): { sql: string; values: unknown[] } {
  const conditions: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  if (filter.search) conditions.push(`search_text like '%' || lower(${param(escapeLike(filter.search))}::text) || '%'`);
  if (filter.events.length > 0) {
    conditions.push(`lower(type) like any (${param(filter.events.map((e) => `%${escapeLike(e.toLowerCase())}%`))}::text[])`);
  }
  if (filter.reportId !== undefined) conditions.push(`report_id = ${param(filter.reportId)}::text`);
  if (filter.hideSupervisor || filter.supervisor === 'exclude') conditions.push('not is_supervisor');
  if (filter.supervisor === 'only') conditions.push('is_supervisor');
  return { sql: conditions.length > 0 ? `where ${conditions.join(' and ')}` : '', values };
}

export interface EventSearchResult {
  total: number;
  events: EventRecord[];
}

export async function searchEvents(db: Queryable, filter: AuditFilter): Promise<EventSearchResult> {
  const where = whereClause(filter);
  const n = where.values.length;
  const [count, page] = await Promise.all([
    db.query<{ total: number }>(`select count(*)::int as total from events ${where.sql}`, where.values),
    db.query<EventRecord>(
      `select id, type, actor_kind, actor_chat_id, actor_name, report_id, before, after, data, correlation_id, is_supervisor, created_at
       from events ${where.sql}
       order by ${ORDER[filter.sort]}
       limit $${n + 1}::int offset $${n + 2}::int`,
      [...where.values, filter.limit, filter.offset],
    ),
  ]);
  return { total: count.rows[0]?.total ?? 0, events: page.rows };
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
