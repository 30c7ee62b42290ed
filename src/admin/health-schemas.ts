// GET /admin/health (spec: System administration): ten sections, each ok, warn or error, and the
// incident history. The spec leaves the inner fields open; every measurement is declared here
// (what each means and its thresholds: docs/operations.md, "Health").
import { Type, type Static, type TProperties } from 'typebox';
import { nullableTimestamp, stringEnum, timestamp } from '../platform/http/schemas.js';
import { RetentionHealth } from './retention/health.js';

export const HEALTH_STATUSES = ['ok', 'warn', 'error'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/** The nine measured sections, in the spec's order; `overall` is the worst of them. */
export const SECTION_NAMES = ['database', 'api', 'actions', 'queue', 'agents', 'evidence', 'auth', 'audit', 'events'] as const;
export type SectionName = (typeof SECTION_NAMES)[number];

const Status = stringEnum(HEALTH_STATUSES);
const nullableNumber = (description: string) => Type.Unsafe<number | null>({ type: ['number', 'null'], description });
const nullableInteger = (description: string) => Type.Unsafe<number | null>({ type: ['integer', 'null'], description });
const nullableBoolean = (description: string) => Type.Unsafe<boolean | null>({ type: ['boolean', 'null'], description });
const count = (description: string) => nullableInteger(`${description} (counting stops at 10,000: a capped count means at least that many)`);
const StatusesByName = Type.Record(Type.String(), Status, { description: 'The sections that are not ok, by name' });

/**
 * A section: its status, why it is not ok, and the measurements behind it. A measurement is null
 * when it could not be taken (the database did not answer in time) or there is nothing to measure.
 */
function section<P extends TProperties>(description: string, measurements: P) {
  return Type.Object(
    {
      status: Status,
      reasons: Type.Array(Type.String(), { description: 'Why the section is not ok (empty when ok), or why it could not be measured' }),
      ...measurements,
    },
    { additionalProperties: false, description },
  );
}

export const DatabaseSection = section('The environment database: reachable in time, migrations current', {
  store: stringEnum(['pglite', 'postgres'] as const),
  round_trip_ms: nullableNumber('One trivial statement, on a connection already held'),
  query_ms: nullableNumber('The statement that reads every measurement below'),
  migrations_applied: nullableInteger('Highest migration version recorded in the database'),
  migrations_expected: Type.Integer({ description: 'Highest migration file this instance ships' }),
  migrations_current: nullableBoolean('Applied and expected agree'),
  backup: Type.Unsafe<{ last_good_at: string | null; last_error_at: string | null; last_error: string | null; interval_s: number } | null>({
    type: ['object', 'null'],
    description: 'The backups this instance writes of the embedded store (BACKUP_DIR): when the newest good one was taken, the latest failure, the schedule. Null when this instance does not back this environment up (no BACKUP_DIR, or PostgreSQL)',
    properties: {
      last_good_at: { type: ['string', 'null'], format: 'date-time' },
      last_error_at: { type: ['string', 'null'], format: 'date-time' },
      last_error: { type: ['string', 'null'] },
      interval_s: { type: 'number' },
    },
    required: ['last_good_at', 'last_error_at', 'last_error', 'interval_s'],
    additionalProperties: false,
  }),
  replicas: Type.Array(
    Type.Object(
      {
        name: Type.String({ description: 'host:port/database of the replica (no credentials)' }),
        state: stringEnum(['ok', 'lagging', 'down', 'not_in_recovery', 'other_timeline', 'starting'] as const, { description: "ok: serves reads; lagging: further behind than REPLICA_MAX_LAG_SECONDS; down: not answering; not_in_recovery: not a replica (promoted, or a primary's URL); other_timeline: not following the primary's timeline (left on the old one by a failover, or not caught up with the switch yet); starting: not polled yet" }),
        lag_s: nullableNumber('Seconds since the primary was last at a position this replica has replayed (0: caught up; null: down)'),
        replayed_lsn: Type.Union([Type.String(), Type.Null()], { description: "The replica's pg_last_wal_replay_lsn() as this instance last read it" }),
        paused: Type.Boolean({ description: 'Replay is paused on the replica (pg_wal_replay_pause())' }),
        reads: Type.Integer({ description: 'Reads this instance sent to it since it started' }),
        last_error: Type.Union([Type.String(), Type.Null()], { description: 'Why it is skipped, when it is' }),
      },
      { additionalProperties: false },
    ),
    { description: 'The read replicas (<ENV>_DATABASE_REPLICA_URLS) as this instance sees them; empty when none are configured' },
  ),
  retention: RetentionHealth,
});

const REALTIME_FIELDS = ['connections', 'channels', 'delivered', 'refused_joins', 'dropped_frames', 'slow_skips', 'broadcast_failures'] as const;

export const ApiSection = section('This instance of the service', {
  version: Type.String({ description: 'package.json version' }),
  node_version: Type.String(),
  pid: Type.Integer(),
  uptime_s: Type.Number({ description: 'Seconds since this process started' }),
  rss_mb: Type.Number({ description: 'Resident memory of this process' }),
  heap_used_mb: Type.Number(),
  realtime: Type.Unsafe<{ [K in (typeof REALTIME_FIELDS)[number]]: number } | null>({
    type: ['object', 'null'],
    description: 'This instance’s realtime hub since it started: open connections and channels, broadcasts delivered, joins refused, frames dropped (malformed or over the rate), broadcasts skipped for a slow subscriber, broadcasts that failed to send',
    properties: Object.fromEntries(REALTIME_FIELDS.map((k) => [k, { type: 'integer' }])),
    required: [...REALTIME_FIELDS],
  }),
});

const queueMeasurements = (oldestPending: string) => ({
  pending: count('Items waiting for the bot'),
  processing: count('Items handed out and not completed'),
  failed: count('Items that failed for good and wait for an admin (requeue or cancel)'),
  oldest_pending_age_s: nullableNumber(oldestPending),
  oldest_processing_age_s: nullableNumber('Seconds since the oldest processing item was handed out'),
  stale_after_s: Type.Number({ description: 'The stale timeout: a claim older than this is swept back on the next pickup' }),
});

export const ActionsSection = section(
  'The report action queue (report_actions): work the bot carries out on reports',
  queueMeasurements('Seconds since the oldest pending action was enqueued'),
);

export const QueueSection = section('The discipline delivery queue (discipline_deliveries) and its sweeps (stale claims, punishment expiry)', {
  ...queueMeasurements('Seconds since the oldest pending delivery fell due (0 when none is due yet)'),
  oldest_overdue_expiry_s: nullableNumber('Seconds since a punishment still in force should have expired (null when none is overdue)'),
});

export const AgentsSection = section('Agents and the admin allowlist', {
  active: nullableInteger('Agents whose status is active'),
  admins_active: nullableInteger('Active agents with an active allowlist entry'),
  directors_active: nullableInteger('Of those, Directors (needed to manage the allowlist)'),
  admins_not_active: nullableInteger('Active allowlist entries of agents that are not active'),
});

export const EvidenceSection = section('Evidence rows attached to reports', {
  newest_at: nullableTimestamp('When the newest evidence row was added'),
  newest_age_s: nullableNumber('Seconds since then'),
});

export const AuthSection = section('Credentials and integrations of this environment', {
  api_key_configured: Type.Boolean({ description: "The bot's API key is set" }),
  oauth_configured: nullableBoolean('Chat-platform sign-in is configured (null: not known to this route)'),
  realtime_configured: Type.Boolean({ description: 'Realtime signing secret, URL and anon key are all set' }),
  sessions_active: count('Unexpired browser sessions'),
});

export const AuditSection = section('The admin audit trail (audit_log) and the hash chain that seals it and the events', {
  newest_at: nullableTimestamp('When the newest audit row was written'),
  newest_age_s: nullableNumber('Seconds since then'),
  newest_admin_event_at: nullableTimestamp('When the newest admin.* event was written'),
  admin_events_audited: nullableBoolean('The newest admin event has its audit row (an audit row at its time or later)'),
  chain_rows: nullableInteger('Rows of events and audit_log sealed in the hash chain (its checkpoint count)'),
  chain_head: Type.Union([Type.String(), Type.Null()], { description: "The chain's head hash (its checkpoint hash; verify-audit --against proves the chain still extends it)" }),
  chain_last_sealed_at: nullableTimestamp('When the last seal was written'),
  unsealed_rows: count('Rows written and not sealed yet'),
  sealing_delay_s: nullableNumber('Seconds since the oldest row not sealed yet was written (0: every row is sealed)'),
  last_verification: Type.Union(
    [
      Type.Object({
        verified_at: timestamp('When verify-audit ran'),
        ok: Type.Boolean({ description: 'The chain verified' }),
        rows: Type.Integer({ description: 'Seals verified' }),
        head_hash: Type.Union([Type.String(), Type.Null()], { description: 'The last chain hash verified' }),
        problem: Type.Union([Type.String(), Type.Null()], { description: 'The first row that did not match, when it failed' }),
      }),
      Type.Null(),
    ],
    { description: 'The latest verify-audit run (null: never run)' },
  ),
});

export const EventsSection = section('The canonical event log (events)', {
  newest_at: nullableTimestamp('When the newest event was written'),
  newest_age_s: nullableNumber('Seconds since then'),
});

export const OverallSection = Type.Object(
  { status: Status, sections: StatusesByName },
  { additionalProperties: false, description: 'The worst status of the nine sections' },
);

export const HealthIncident = Type.Object(
  {
    id: Type.Integer(),
    status_before: Status,
    status_after: Status,
    sections: StatusesByName,
    correlation_id: Type.String({ description: 'The request whose computation recorded the change' }),
    created_at: timestamp('When the measurement that saw the change was read'),
  },
  { additionalProperties: false },
);

export const HealthResult = Type.Object({
  success: Type.Literal(true),
  checked_at: timestamp('When the measurements were read (the database clock; this instance\'s when the database did not answer)'),
  overall: OverallSection,
  database: DatabaseSection,
  api: ApiSection,
  actions: ActionsSection,
  queue: QueueSection,
  agents: AgentsSection,
  evidence: EvidenceSection,
  auth: AuthSection,
  audit: AuditSection,
  events: EventsSection,
  incidents: Type.Array(HealthIncident, { description: 'Changes of the overall status, newest first, at most 50' }),
});
export type HealthResult = Static<typeof HealthResult>;
export type HealthSections = Omit<HealthResult, 'success' | 'checked_at' | 'overall' | 'incidents'>;
