// The thresholds of GET /admin/health and how each section is judged from its measurements. Pure
// functions of what was read: docs/operations.md ("Health") lists the same thresholds, section by
// section; change both together.
import type { HubStats } from '../realtime/hub.js';
import { GENESIS_HASH } from '../platform/audit-chain/hashes.js';
import type { BackupStatus } from '../platform/backup/scheduler.js';
import type { RetentionHealth } from './retention/health.js';
import type { ReplicaStatus } from '../platform/db/replicas.js';
import type { StoreKind } from '../platform/db/types.js';
import type { HealthReading } from './health-queries.js';
import type { HealthSections, HealthStatus, SectionName } from './health-schemas.js';

/** The answer comes within this, whatever the database does (an exhausted pool, a hung driver). */
export const HEALTH_DEADLINE_MS = 2_000;
/** Each health statement is cancelled by PostgreSQL past this (a lock held elsewhere, overload). */
export const HEALTH_STATEMENT_TIMEOUT_MS = 1_000;
/** Queue and session counts stop here, so a runaway queue costs no more to check than a healthy one. */
export const HEALTH_COUNT_CAP = 10_000;
/** Incidents listed in the answer, newest first. */
export const HEALTH_INCIDENTS_LIMIT = 50;

/**
 * database: warn when one trivial statement takes this long on a held connection (normally well
 * under 1 ms). High enough that one sample slowed by a busy moment does not flip the overall status
 * and write a pair of incidents.
 */
export const DATABASE_ROUND_TRIP_WARN_MS = 500;
/** api: resident memory of this process (idle is about 300 MB; the embedded store's first start peaks near 900 MB). */
export const API_RSS_WARN_MB = 1_536;
export const API_RSS_ERROR_MB = 3_072;
/** actions and queue: how long the oldest pending item may wait for the bot. */
export const QUEUE_WAIT_WARN_S = 5 * 60;
export const QUEUE_WAIT_ERROR_S = 30 * 60;
/** actions and queue: failed items wait for an admin; one is a warning, this many an error. */
export const QUEUE_FAILED_ERROR = 25;
/** queue: how long a punishment may stay in force past its expiry (the expiry sweep runs on pickups). */
export const EXPIRY_OVERDUE_WARN_S = 5 * 60;
export const EXPIRY_OVERDUE_ERROR_S = 30 * 60;
/** audit: a row not sealed this long after it was written (the sealer runs every 1 to 4 s; issue 21 allows 5). */
export const SEALING_DELAY_WARN_S = 5;
export const SEALING_DELAY_ERROR_S = 60;
/** events: no event at all for this long (the bot and the dashboard write events all day). */
export const EVENTS_QUIET_WARN_S = 24 * 60 * 60;

const RANK: Record<HealthStatus, number> = { ok: 0, warn: 1, error: 2 };

export function worstOf(statuses: Iterable<HealthStatus>): HealthStatus {
  let worst: HealthStatus = 'ok';
  for (const status of statuses) if (RANK[status] > RANK[worst]) worst = status;
  return worst;
}

type Finding = [HealthStatus, string] | false | null | undefined;

/** The section's status and reasons from its findings (a finding is a status and why). */
function judged<T extends object>(findings: Finding[], measurements: T): { status: HealthStatus; reasons: string[] } & T {
  const found = findings.filter((f): f is [HealthStatus, string] => Boolean(f));
  return { status: worstOf(found.map(([status]) => status)), reasons: found.map(([, why]) => why), ...measurements };
}

const round = (n: number | null, digits = 1) => (n === null ? null : Number(n.toFixed(digits)));
const minutes = (seconds: number) => `${Math.round(seconds / 60)} min`;
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
const secondsBetween = (from: string | null, to: string) => (from === null ? null : round((Date.parse(to) - Date.parse(from)) / 1000));

function waitFinding(what: string, ageS: number | null, warnS: number, errorS: number): Finding {
  if (ageS === null || ageS < warnS) return null;
  return [ageS >= errorS ? 'error' : 'warn', `${what} for ${minutes(ageS)} (warn at ${minutes(warnS)}, error at ${minutes(errorS)})`];
}

function failedFinding(what: [string, string], failed: number): Finding {
  if (failed === 0) return null;
  return [failed >= QUEUE_FAILED_ERROR ? 'error' : 'warn', `${plural(failed, `failed ${what[0]}`, `failed ${what[1]}`)} waiting for an admin (error at ${QUEUE_FAILED_ERROR})`];
}

function staleFinding(what: string, claimAgeS: number | null, staleAfterS: number): Finding {
  if (claimAgeS === null || claimAgeS <= staleAfterS) return null;
  return ['warn', `a ${what} has been processing for ${minutes(claimAgeS)}, past the stale timeout: no pickup has swept it back (is the bot polling?)`];
}

/** database: warn while the latest scheduled backup failed (the older good one is what there is). */
function backupFinding(backup: BackupStatus | null): Finding {
  if (backup?.lastErrorAt == null || (backup.lastGoodAt !== null && backup.lastGoodAt >= backup.lastErrorAt)) return null;
  return ['warn', `the latest scheduled backup failed: ${backup.lastError} (last good one: ${backup.lastGoodAt?.toISOString() ?? 'none'})`];
}

/**
 * database: warn while the retention fails and has not passed since (a pass that cannot run, such
 * as one on PostgreSQL without the environment's pseudonym key, erases nothing, every time).
 */
function retentionFinding(retention: RetentionHealth): Finding {
  if (retention.last_error_at === null || (retention.last_run_at !== null && retention.last_run_at >= retention.last_error_at)) return null;
  return ['warn', `the retention failed: ${retention.last_error ?? 'unknown error'} (last complete pass: ${retention.last_run_at ?? 'none'})`];
}

/** database: a replica that serves no reads (its reads go to the primary: slower, never wrong). */
function replicaFinding(replica: ReplicaStatus): Finding {
  if (replica.state === 'ok' || replica.state === 'starting') return null;
  if (replica.state === 'lagging') return ['warn', `replica ${replica.name} is ${replica.lag_s} s behind the primary: skipped (REPLICA_MAX_LAG_SECONDS)`];
  const what = { down: 'down', not_in_recovery: 'not in recovery', other_timeline: "not on the primary's timeline" }[replica.state];
  return ['warn', `replica ${replica.name} is ${what}: skipped (${replica.last_error})`];
}

export interface HealthInputs {
  /** Undefined when the database did not answer; `failure` says why. */
  reading: HealthReading | undefined;
  failure: string | undefined;
  checkedAt: string;
  store: StoreKind;
  roundTripMs: number | null;
  queryMs: number | null;
  migrationsExpected: number;
  staleTimeoutMs: number;
  apiKeyConfigured: boolean;
  oauthConfigured: boolean | null;
  realtimeConfigured: boolean;
  /** This instance's hub and broadcasts; null where the app has none (tests of the section alone). */
  realtime: RealtimeStats | null;
  version: string;
  /** This instance's scheduled backups of the environment; null when it takes none. */
  backup: BackupStatus | null;
  /** The environment's read replicas as this instance sees them (empty: none configured). */
  replicas: ReplicaStatus[];
  retention: RetentionHealth;
}

/** The hub's counts and the broadcasts that failed to send. */
export type RealtimeStats = HubStats & { broadcast_failures: number };

/** Every section from what was measured; a section that needs the database is an error without it. */
export function judgeSections(input: HealthInputs): HealthSections {
  const r = input.reading;
  const unmeasured: Finding = r ? null : ['error', `not measured: ${input.failure ?? 'the database did not answer'}`];
  const at = input.checkedAt;
  const staleAfterS = input.staleTimeoutMs / 1000;
  const memory = process.memoryUsage();
  const rssMb = round(memory.rss / 2 ** 20)!;

  const applied = r?.migrations_applied ?? null;
  const database = judged(
    [
      input.failure !== undefined && ['error', input.failure],
      r && applied !== input.migrationsExpected &&
        (applied === null || applied < input.migrationsExpected
          ? ['error', `migrations behind: database at ${applied ?? 'none'}, this instance ships ${input.migrationsExpected}`]
          : ['warn', `database at migration ${applied}, ahead of this instance (${input.migrationsExpected}): an older instance is still running`]),
      input.roundTripMs !== null && input.roundTripMs >= DATABASE_ROUND_TRIP_WARN_MS &&
        ['warn', `round trip ${Math.round(input.roundTripMs)} ms (warn at ${DATABASE_ROUND_TRIP_WARN_MS} ms)`],
      backupFinding(input.backup),
      retentionFinding(input.retention),
      ...input.replicas.map(replicaFinding),
    ],
    {
      store: input.store,
      round_trip_ms: round(input.roundTripMs, 2),
      query_ms: round(input.queryMs, 2),
      migrations_applied: applied,
      migrations_expected: input.migrationsExpected,
      migrations_current: r ? applied === input.migrationsExpected : null,
      backup: input.backup && {
        last_good_at: input.backup.lastGoodAt?.toISOString() ?? null,
        last_error_at: input.backup.lastErrorAt?.toISOString() ?? null,
        last_error: input.backup.lastError,
        interval_s: input.backup.intervalMs / 1000,
      },
      replicas: input.replicas,
      retention: input.retention,
    },
  );

  const api = judged(
    [
      rssMb >= API_RSS_WARN_MB && [rssMb >= API_RSS_ERROR_MB ? 'error' : 'warn', `resident memory ${Math.round(rssMb)} MB (warn at ${API_RSS_WARN_MB}, error at ${API_RSS_ERROR_MB})`],
    ],
    {
      version: input.version,
      node_version: process.version,
      pid: process.pid,
      uptime_s: round(process.uptime())!,
      rss_mb: rssMb,
      heap_used_mb: round(memory.heapUsed / 2 ** 20)!,
      realtime: input.realtime,
    },
  );

  const actions = judged(
    r
      ? [
          waitFinding('the oldest pending action has waited', r.actions_oldest_pending_s, QUEUE_WAIT_WARN_S, QUEUE_WAIT_ERROR_S),
          failedFinding(['report action', 'report actions'], r.actions_failed),
          staleFinding('report action', r.actions_oldest_claim_s, staleAfterS),
        ]
      : [unmeasured],
    {
      pending: r?.actions_pending ?? null,
      processing: r?.actions_processing ?? null,
      failed: r?.actions_failed ?? null,
      oldest_pending_age_s: round(r?.actions_oldest_pending_s ?? null),
      oldest_processing_age_s: round(r?.actions_oldest_claim_s ?? null),
      stale_after_s: staleAfterS,
    },
  );

  // A delivery paced to a later retry is not late before it falls due.
  const dueS = r?.deliveries_oldest_due_s == null ? null : Math.max(0, r.deliveries_oldest_due_s);
  const overdueS = r?.expiry_overdue_s == null || r.expiry_overdue_s <= 0 ? null : r.expiry_overdue_s;
  const queue = judged(
    r
      ? [
          waitFinding('the oldest due delivery has waited', dueS, QUEUE_WAIT_WARN_S, QUEUE_WAIT_ERROR_S),
          failedFinding(['discipline delivery', 'discipline deliveries'], r.deliveries_failed),
          staleFinding('discipline delivery', r.deliveries_oldest_claim_s, staleAfterS),
          waitFinding('a punishment has stayed in force past its expiry', overdueS, EXPIRY_OVERDUE_WARN_S, EXPIRY_OVERDUE_ERROR_S),
        ]
      : [unmeasured],
    {
      pending: r?.deliveries_pending ?? null,
      processing: r?.deliveries_processing ?? null,
      failed: r?.deliveries_failed ?? null,
      oldest_pending_age_s: round(dueS),
      oldest_processing_age_s: round(r?.deliveries_oldest_claim_s ?? null),
      stale_after_s: staleAfterS,
      oldest_overdue_expiry_s: round(overdueS),
    },
  );

  const agents = judged(
    r
      ? [
          r.directors_active === 0 && ['error', 'no active Director on the admin allowlist: nobody can manage the allowlist (run the bootstrap command)'],
          r.admins_not_active > 0 &&
            ['warn', `${plural(r.admins_not_active, 'active allowlist entry', 'active allowlist entries')} of agents who are not active`],
        ]
      : [unmeasured],
    {
      active: r?.agents_active ?? null,
      admins_active: r?.admins_active ?? null,
      directors_active: r?.directors_active ?? null,
      admins_not_active: r?.admins_not_active ?? null,
    },
  );

  const evidence = judged([unmeasured], {
    newest_at: r?.evidence_newest_at ?? null,
    newest_age_s: secondsBetween(r?.evidence_newest_at ?? null, at),
  });

  const auth = judged(
    [
      !input.apiKeyConfigured && ['error', "the bot's API key is not configured for this environment: the bot cannot authenticate"],
      input.oauthConfigured === false && ['error', 'chat-platform sign-in is not configured: nobody can sign in'],
      !input.realtimeConfigured && ['warn', 'realtime is not configured: the training realtime token answers 503'],
      unmeasured,
    ],
    {
      api_key_configured: input.apiKeyConfigured,
      oauth_configured: input.oauthConfigured,
      realtime_configured: input.realtimeConfigured,
      sessions_active: r?.sessions_active ?? null,
    },
  );

  // An admin mutation writes its audit row and its event in one transaction, with the same
  // created_at: the newest admin event can never be newer than the newest audit row.
  const adminEventAt = r?.admin_event_newest_at ?? null;
  const audited = r ? adminEventAt === null || (r.audit_newest_at !== null && r.audit_newest_at >= adminEventAt) : null;
  const sealingDelay = r ? round(r.unsealed_oldest_s ?? 0) : null;
  const audit = judged(
    [
      unmeasured,
      audited === false && ['error', `the admin event of ${adminEventAt} has no audit row: the admin audit trail is broken`],
      r?.verified_ok === false && ['error', `the latest verify-audit (${r.verified_at}) found the chain altered: ${r.verified_problem}`],
      sealingDelay !== null && sealingDelay >= SEALING_DELAY_ERROR_S
        ? ['error', `rows written ${Math.round(sealingDelay)} s ago are not sealed (error at ${SEALING_DELAY_ERROR_S} s): no instance is sealing`]
        : sealingDelay !== null && sealingDelay >= SEALING_DELAY_WARN_S && ['warn', `rows written ${Math.round(sealingDelay)} s ago are not sealed (warn at ${SEALING_DELAY_WARN_S} s)`],
    ],
    {
      newest_at: r?.audit_newest_at ?? null,
      newest_age_s: secondsBetween(r?.audit_newest_at ?? null, at),
      newest_admin_event_at: adminEventAt,
      admin_events_audited: audited,
      chain_rows: r ? (r.chain_rows ?? 0) : null,
      chain_head: r ? (r.chain_head ?? GENESIS_HASH) : null,
      chain_last_sealed_at: r?.chain_last_sealed_at ?? null,
      unsealed_rows: r?.unsealed_rows ?? null,
      sealing_delay_s: sealingDelay,
      last_verification:
        r?.verified_at == null
          ? null
          : { verified_at: r.verified_at, ok: r.verified_ok!, rows: r.verified_rows!, head_hash: r.verified_head, problem: r.verified_problem },
    },
  );

  const eventsAgeS = secondsBetween(r?.events_newest_at ?? null, at);
  const events = judged(
    [
      unmeasured,
      eventsAgeS !== null && eventsAgeS >= EVENTS_QUIET_WARN_S && ['warn', `no event for ${Math.round(eventsAgeS / 3600)} h (warn at ${EVENTS_QUIET_WARN_S / 3600} h)`],
    ],
    { newest_at: r?.events_newest_at ?? null, newest_age_s: eventsAgeS },
  );

  return { database, api, actions, queue, agents, evidence, auth, audit, events };
}

/** The non-ok sections by name, in the spec's order. */
export function notOk(sections: HealthSections): Partial<Record<SectionName, HealthStatus>> {
  return Object.fromEntries(Object.entries(sections).filter(([, s]) => s.status !== 'ok').map(([name, s]) => [name, s.status]));
}
