// What GET /admin/health reads and writes (spec: System administration; Health history entry).
// One statement reads every measurement, one records a change of the overall status and lists the
// history. Health must stay cheap at a million reports: every part below is an index probe (a
// newest row, a min over a partial index, a count capped by a limit), never a scan or a count of
// reports or events. Not even the report_counts counter table is read: after a bulk load its few
// live rows sit at the end of thousands of emptied pages (vacuum cannot truncate them), and its
// sequential scan measured 19 ms of a 20 ms read over a million reports.
import type { Queryable } from '../platform/db/types.js';
import type { HealthStatus } from './health-schemas.js';
import type { AdminAction } from './trail.js';

// Every admin event type: the audit section checks the newest of them has its audit row. Listed
// as a record so that a new admin event type fails to compile until it is added here.
export const ADMIN_EVENT_TYPES = Object.keys({
  'admin.queue_requeued': true,
  'admin.queue_cancelled': true,
  'admin.queue_swept': true,
  'admin.access_granted': true,
  'admin.access_revoked': true,
  'admin.access_removed': true,
  'admin.report_corrected': true,
  'admin.schema_reloaded': true,
  'admin.agent_updated': true,
  'admin.subject_exported': true,
  'admin.subject_erased': true,
  'admin.case_erased': true,
} satisfies Record<AdminAction, true>);

export interface HealthReading {
  /** The database's clock when the statement started: every age below is measured from it. */
  read_at: string;
  migrations_applied: number | null;
  actions_pending: number;
  actions_processing: number;
  actions_failed: number;
  /** Seconds since the oldest pending action was enqueued. */
  actions_oldest_pending_s: number | null;
  /** Seconds since the oldest processing action was claimed. */
  actions_oldest_claim_s: number | null;
  deliveries_pending: number;
  deliveries_processing: number;
  deliveries_failed: number;
  /** Seconds since the oldest pending delivery fell due (negative: none is due yet). */
  deliveries_oldest_due_s: number | null;
  deliveries_oldest_claim_s: number | null;
  /** Seconds since the earliest expiry of a punishment still in force (negative: none has passed). */
  expiry_overdue_s: number | null;
  agents_active: number;
  admins_active: number;
  directors_active: number;
  admins_not_active: number;
  evidence_newest_at: string | null;
  sessions_active: number;
  audit_newest_at: string | null;
  admin_event_newest_at: string | null;
  events_newest_at: string | null;
  /** The audit hash chain: rows sealed, head hash, when its last seal was written. */
  chain_rows: number | null;
  chain_head: string | null;
  chain_last_sealed_at: string | null;
  /** Rows not sealed yet, and seconds since the first of them (in chain order) was written. */
  unsealed_rows: number;
  unsealed_oldest_s: number | null;
  /** The latest verify-audit run. */
  verified_at: string | null;
  verified_ok: boolean | null;
  verified_rows: number | null;
  verified_head: string | null;
  verified_problem: string | null;
}

const age = (column: string) => `extract(epoch from statement_timestamp() - ${column})::float8`;
const capped = (from: string) => `(select count(*) from (select from ${from} limit $1::int) c)::int`;
/** Rows of a sealed table the sealer has not reached yet (a range of its sealing index). */
const unsealed = (table: string) => `${table} r cross join audit_chain_state s where (r.sealing_tx, r.id) > (s.${table}_tx, s.${table}_id)`;

// Counts stop at $1 (HEALTH_COUNT_CAP): a queue the bot stopped draining costs no more to check
// than a healthy one. Each min() is the first entry of a partial index (status = 'pending' or
// 'processing'); the newest rows are the first entries of the created_at indexes. The newest
// admin event is one probe of events_type_idx per admin event type ($2).
const READ_SQL = `
select statement_timestamp() as read_at,
  (select max(version) from schema_migrations) as migrations_applied,
  ${capped(`report_actions where status = 'pending'`)} as actions_pending,
  ${capped(`report_actions where status = 'processing'`)} as actions_processing,
  ${capped(`report_actions where status = 'failed'`)} as actions_failed,
  (select ${age('min(created_at)')} from report_actions where status = 'pending') as actions_oldest_pending_s,
  (select ${age('min(claimed_at)')} from report_actions where status = 'processing') as actions_oldest_claim_s,
  ${capped(`discipline_deliveries where status = 'pending'`)} as deliveries_pending,
  ${capped(`discipline_deliveries where status = 'processing'`)} as deliveries_processing,
  ${capped(`discipline_deliveries where status = 'failed'`)} as deliveries_failed,
  (select ${age('min(available_at)')} from discipline_deliveries where status = 'pending') as deliveries_oldest_due_s,
  (select ${age('min(claimed_at)')} from discipline_deliveries where status = 'processing') as deliveries_oldest_claim_s,
  (select ${age('min(expires_at)')} from punishments where status in ('Active', 'Appealed') and expires_at is not null) as expiry_overdue_s,
  (select count(*) from agents where status = 'active')::int as agents_active,
  a.admins_active, a.directors_active, a.admins_not_active,
  (select created_at from report_evidence order by created_at desc, id desc limit 1) as evidence_newest_at,
  ${capped('sessions where expires_at > statement_timestamp()')} as sessions_active,
  (select created_at from audit_log order by created_at desc, id desc limit 1) as audit_newest_at,
  (select max(e.created_at) from unnest($2::text[]) t(type)
     cross join lateral (select x.created_at from events x where x.type = t.type order by x.created_at desc limit 1) e) as admin_event_newest_at,
  (select created_at from events order by created_at desc, id desc limit 1) as events_newest_at,
  h.position as chain_rows, encode(h.chain_hash, 'hex') as chain_head, h.sealed_at as chain_last_sealed_at,
  least($1::int, ${capped(unsealed('events'))} + ${capped(unsealed('audit_log'))}) as unsealed_rows,
  (select ${age('min(u.created_at)')} from (
     (select r.created_at from ${unsealed('events')} order by r.sealing_tx, r.id limit 1)
     union all (select r.created_at from ${unsealed('audit_log')} order by r.sealing_tx, r.id limit 1)) u) as unsealed_oldest_s,
  v.verified_at, v.ok as verified_ok, v.rows_verified as verified_rows, v.head_hash as verified_head, v.problem as verified_problem
from (
  select count(*) filter (where g.status = 'active')::int as admins_active,
         count(*) filter (where g.status = 'active' and g.agent_rank = 'Director')::int as directors_active,
         count(*) filter (where g.status <> 'active')::int as admins_not_active
  from admin_allowlist l join agents g on g.chat_id = l.chat_id
  where l.active
) a
left join lateral (select position, chain_hash, sealed_at from audit_chain order by position desc limit 1) h on true
left join lateral (select verified_at, ok, rows_verified, head_hash, problem from audit_verifications order by id desc limit 1) v on true`;

export { READ_SQL as HEALTH_READ_SQL };

export async function readHealth(db: Queryable, options: { countCap: number; adminEventTypes: readonly string[] }): Promise<HealthReading> {
  const { rows } = await db.query<HealthReading>(READ_SQL, [options.countCap, options.adminEventTypes], { name: 'health_read' });
  return rows[0]!;
}

/**
 * Bounds every later statement of the transaction on the server (PostgreSQL cancels it with
 * 57014): a lock held elsewhere or an overloaded server ends in an answer, not a wait. Its own
 * duration is the round trip the database section reports.
 */
export async function boundStatements(db: Queryable, timeoutMs: number): Promise<void> {
  await db.query(`select set_config('statement_timeout', $1::text, true)`, [`${Math.round(timeoutMs)}ms`], { name: 'health_timeout' });
}

export interface HealthIncident {
  id: number;
  status_before: HealthStatus;
  status_after: HealthStatus;
  sections: Record<string, HealthStatus>;
  correlation_id: string;
  created_at: string;
}

export interface HealthChange {
  status: HealthStatus;
  /** The non-ok sections and their statuses. */
  sections: Record<string, HealthStatus>;
  /** When the measurement was read (the database's clock); null when it could not be read. */
  readAt: string | null;
  correlationId: string;
  limit: number;
}

// The compare-and-set that makes an incident exactly once: the update locks the single state row
// and, when another computation changed it meanwhile, re-checks its conditions on the committed
// row after the wait; only an update that changed the status inserts an incident. Setting
// previous_status from `status` in the same update captures the status it replaced under the
// lock. A measurement read before the last recorded change (an instance whose read lost the race)
// cannot undo it; a recorded time far ahead of the read means the database's clock was set back,
// and is not allowed to freeze the history. The newest incidents follow, the new one included
// (a statement does not see its own insert, hence the union).
const RECORD_SQL = `
with measured as (
  select coalesce($2::timestamptz, statement_timestamp()) as at
), changed as (
  update health_state s set previous_status = s.status, status = $1::text, changed_at = m.at
  from measured m
  where s.id and s.status <> $1::text and (s.changed_at < m.at or s.changed_at > m.at + interval '5 minutes')
  returning s.previous_status, s.status, s.changed_at
), recorded as (
  insert into health_incidents (status_before, status_after, sections, correlation_id, created_at)
  select previous_status, status, $3::jsonb, $4::text, changed_at from changed
  returning id, status_before, status_after, sections, correlation_id, created_at
)
select * from recorded
union all
(select id, status_before, status_after, sections, correlation_id, created_at from health_incidents
 order by created_at desc, id desc limit $5::int)
order by created_at desc, id desc
limit $5::int`;

/** Records a change of the overall status (at most once per change) and lists the newest incidents. */
export async function recordHealth(db: Queryable, change: HealthChange): Promise<HealthIncident[]> {
  const { rows } = await db.query<HealthIncident>(
    RECORD_SQL,
    [change.status, change.readAt, JSON.stringify(change.sections), change.correlationId, change.limit],
    { name: 'health_record' },
  );
  return rows;
}
