// Streaming replicas that serve reads (issue 22), with read-your-writes. PostgreSQL's own physical
// replication keeps them; this module only decides, per read, whether a replica may answer it.
//
// - A read looks its caller's position (read-positions.ts) up on the primary (one index probe) and
//   goes to a replica that has replayed past it (`pg_last_wal_replay_lsn()`); when none has, it
//   waits a few tens of milliseconds for one, then reads from the primary.
// - A poller (every POLL_MS) reads each replica's replay position and the primary's WAL position.
//   A replica is skipped while it is down, is not in recovery, or lags more than
//   REPLICA_MAX_LAG_SECONDS: the time since the primary was last at a position the replica has
//   replayed (measured against the primary's own positions, so no clocks are compared and an idle
//   primary means no lag). A read that fails on a replica is answered by the primary, never failed.
// - A replica serves only while it follows the primary's timeline (timelines.ts): one a failover
//   left on the old timeline may hold rows the new primary never received, and its replay
//   position does not compare with the new primary's. The poller writes a mark on the primary's
//   timeline and asks each replica for it; a read whose position lookup finds the primary on
//   another timeline than the poller last saw (a promotion since) goes to the primary.
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { withinDeadline } from '../deadline.js';
import { openPostgres } from './postgres.js';
import { deleteOldPositions, formatLsn, parseLsn, positionOf, UNREACHABLE } from './read-positions.js';
import { isConnectionError, replicaName, type ReadRoute, type Replica, type ReplicaStatus } from './replica-state.js';
import { deleteOldMarks, HAS_MARK_SQL, TIMELINE_SQL, TimelineMark } from './timelines.js';
import type { Db, QueryOptions, QueryResult, Queryable } from './types.js';

export { formatLsn, parseLsn, recordPosition } from './read-positions.js';
export { replicaName, type ReadRoute, type ReplicaState, type ReplicaStatus } from './replica-state.js';

/** How often each instance reads every replica's replay position and the primary's WAL position. */
export const POLL_MS = 100;
/** How long a read waits for a replica to replay its caller's last change before using the primary. */
export const READ_WAIT_MS = 40;
/** While waiting, how often the candidate replica is asked again. */
const RECHECK_MS = 5;
/** A replica that does not answer the poller within this is down until it does. */
const PROBE_DEADLINE_MS = 1_000;
/** How often the poller deletes old read positions (read-positions.ts). */
const POSITION_CLEANUP_MS = 60_000;

interface Sample {
  at: number;
  lsn: bigint;
}

export interface ReplicaSetOptions {
  primary: Db;
  urls: readonly string[];
  maxLagSeconds: number;
  poolSize: number;
  /** DATABASE_PREPARED_STATEMENTS, as on the primary (a replica may sit behind a pooler too). */
  preparedStatements?: boolean;
  applicationName: string;
  onIdleError?: (err: Error) => void;
  /** Where a replica's change of state is told (down, lagging, back). */
  log: FastifyBaseLogger;
  /** For tests: a different cadence. */
  pollMs?: number;
}

export class ReplicaSet {
  private readonly replicas: Replica[];
  /** The primary's WAL position over the last stretch of time, oldest first. */
  private readonly samples: Sample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private next = 0;
  private closed = false;
  /** Reads by where they went, since start. */
  readonly routed: Record<ReadRoute, number> = { replica: 0, primary_behind: 0, primary_unavailable: 0, primary_error: 0 };
  private readonly primary: Db;
  private readonly maxLagMs: number;
  private readonly pollMs: number;
  private readonly log: FastifyBaseLogger;
  private lastCleanup = 0;
  /** The primary's timeline as the poller last read it, and this instance's mark on it. */
  private readonly mark = new TimelineMark();

  constructor(options: ReplicaSetOptions) {
    this.primary = options.primary;
    this.log = options.log;
    this.maxLagMs = options.maxLagSeconds * 1000;
    this.pollMs = options.pollMs ?? POLL_MS;
    this.replicas = options.urls.map((url) => ({
      name: replicaName(url),
      db: openPostgres({
        connectionString: url,
        max: options.poolSize,
        preparedStatements: options.preparedStatements,
        applicationName: `${options.applicationName}:replica`,
        connectionTimeoutMillis: PROBE_DEADLINE_MS,
        onIdleError: options.onIdleError,
      }),
      state: 'starting',
      replayed: 0n,
      paused: false,
      lagS: null,
      reads: 0,
      lastError: null,
    }));
  }

  /** Polls once (so the first reads already know the replicas), then every POLL_MS. */
  async start(): Promise<void> {
    await this.poll();
    // A mark the first poll wrote takes the replicas a moment to replay: asked again for a little
    // while, so that the first reads already have them.
    for (let i = 0; i < 10 && this.replicas.some((r) => r.state === 'other_timeline'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await this.poll();
    }
    const tick = () => {
      if (this.closed) return;
      this.polling = this.poll().finally(() => {
        this.polling = undefined;
        if (!this.closed) this.timer = setTimeout(tick, this.pollMs).unref();
      });
    };
    this.timer = setTimeout(tick, this.pollMs).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.polling;
    await Promise.all(this.replicas.map((r) => r.db.close()));
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((r) => ({
      name: r.name,
      state: r.state,
      lag_s: r.lagS === null ? null : Math.round(r.lagS * 1000) / 1000,
      replayed_lsn: r.state === 'down' || r.replayed === 0n ? null : formatLsn(r.replayed),
      paused: r.paused,
      reads: r.reads,
      last_error: r.lastError,
    }));
  }

  /**
   * Runs a read on a replica that has replayed `position` (the caller's last change; 0n for none),
   * else on the primary. The result is the same either way, as of a moment after that change.
   */
  async query<R>(position: bigint, text: string, values?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>> {
    // A position of another timeline (a failover since) no replica can be shown to have reached.
    let replica = position === UNREACHABLE ? undefined : this.caughtUp(position);
    if (replica === undefined && position !== UNREACHABLE && this.usable().length > 0) replica = await this.waitFor(position);
    if (replica === undefined) {
      this.routed[this.usable().length > 0 ? 'primary_behind' : 'primary_unavailable']++;
      return this.primary.query<R>(text, values, options);
    }
    try {
      const result = await replica.db.query<R>(text, values, options);
      replica.reads++;
      this.routed.replica++;
      return result;
    } catch (err) {
      // Whatever went wrong there (the replica stopped, a recovery conflict cancelled the
      // statement), the primary answers; a broken connection also takes the replica out until the
      // poller finds it back. An error the primary repeats is the caller's.
      if (isConnectionError(err)) this.markDown(replica, err);
      this.routed.primary_error++;
      return this.primary.query<R>(text, values, options);
    }
  }

  /**
   * The caller's read position (read-positions.ts), or UNREACHABLE while the primary is on another
   * timeline than the one the poller last saw: until its next pass no replica is known to follow it.
   */
  async positionOf(db: Queryable, caller: string | undefined): Promise<bigint> {
    const { lsn, timeline } = await positionOf(db, caller);
    return timeline === this.mark.timeline ? lsn : UNREACHABLE;
  }

  /** The primary's WAL position now (at or past every commit that has returned), as positionOf. */
  async latestPosition(db: Queryable): Promise<bigint> {
    const { rows } = await db.query<{ lsn: string; timeline: number | null }>(`select pg_current_wal_lsn()::text as lsn, ${TIMELINE_SQL} as timeline`, [], { name: 'current_wal_lsn' });
    return rows[0]!.timeline === this.mark.timeline ? parseLsn(rows[0]!.lsn) : UNREACHABLE;
  }

  private usable(): Replica[] {
    return this.replicas.filter((r) => r.state === 'ok');
  }

  /** A usable replica at or past `position`, taking turns among them. */
  private caughtUp(position: bigint): Replica | undefined {
    const n = this.replicas.length;
    for (let i = 0; i < n; i++) {
      const r = this.replicas[(this.next + i) % n]!;
      if (r.state === 'ok' && r.replayed >= position) {
        this.next = (this.next + i + 1) % n;
        return r;
      }
    }
    return undefined;
  }

  /** Asks the usable replicas again until one has replayed `position`, for READ_WAIT_MS at most. */
  private async waitFor(position: bigint): Promise<Replica | undefined> {
    const until = performance.now() + READ_WAIT_MS;
    for (;;) {
      await Promise.all(this.usable().map((r) => this.probe(r, until - performance.now())));
      const found = this.caughtUp(position);
      if (found || performance.now() + RECHECK_MS >= until) return found;
      await new Promise((resolve) => setTimeout(resolve, RECHECK_MS));
    }
  }

  /**
   * Reads one replica's replay position (and whether replay is paused); false when it did not
   * answer or may not serve (not a replica, or not on the primary's timeline).
   */
  private async probe(replica: Replica, deadlineMs: number): Promise<boolean> {
    const read = replica.db.query<{ recovery: boolean; replayed: string | null; paused: boolean; marked: boolean }>(
      `select pg_is_in_recovery() as recovery, pg_last_wal_replay_lsn()::text as replayed,
              case when pg_is_in_recovery() then pg_is_wal_replay_paused() else false end as paused,
              ${HAS_MARK_SQL(1)} as marked`,
      [this.mark.token ?? null],
      { name: 'replica_probe' },
    );
    let failure: unknown;
    const answer = await withinDeadline(read.catch((err) => void (failure = err)), Math.max(1, deadlineMs));
    if (!answer) {
      if (failure !== undefined || deadlineMs >= PROBE_DEADLINE_MS) this.markDown(replica, failure ?? new Error(`no answer within ${PROBE_DEADLINE_MS} ms`));
      return false;
    }
    const row = answer.rows[0]!;
    if (!row.recovery) {
      replica.state = 'not_in_recovery';
      replica.lastError = 'not a replica: pg_is_in_recovery() is false (promoted, or the URL names a primary)';
      replica.lagS = null;
      return false;
    }
    if (!row.marked) {
      // No mark yet (the primary not read, or not writable) counts as another timeline: the primary answers.
      replica.state = 'other_timeline';
      replica.lastError = `not following the primary's timeline ${this.mark.timeline ?? '(not read yet)'}: it has not replayed this instance's mark of it${this.mark.token === undefined ? ' (none written yet)' : ''} (left on an old timeline by a failover, or not caught up with the mark yet)`;
      replica.lagS = null;
      return false;
    }
    const replayed = row.replayed === null ? 0n : parseLsn(row.replayed);
    if (replayed > replica.replayed) replica.replayed = replayed;
    replica.paused = row.paused;
    return true;
  }

  /** Down until the poller hears from it again (told once, by the poller or here). */
  private markDown(replica: Replica, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (replica.state === 'ok' || replica.state === 'lagging') this.log.warn({ replica: replica.name, state: 'down', was: replica.state, error: message }, 'replica skipped: reads go to the primary');
    replica.state = 'down';
    replica.lagS = null;
    replica.lastError = message;
  }

  /** The poller's pass: the primary's position, then each replica's state and lag. */
  private async poll(): Promise<void> {
    const now = performance.now();
    const primary = await withinDeadline(this.mark.sample(this.primary), PROBE_DEADLINE_MS);
    if (primary !== undefined) {
      if (this.mark.changed(primary)) {
        // Every replica is off the timeline until it has the new mark, before anything is awaited
        // (a read meanwhile compares with the new timeline). Positions of another timeline do not
        // compare: the lag is measured afresh.
        this.samples.length = 0;
        for (const replica of this.replicas) {
          if (replica.state !== 'ok' && replica.state !== 'lagging') continue;
          replica.state = 'other_timeline';
          replica.replayed = 0n;
          replica.lagS = null;
          replica.lastError = "the primary is on a new timeline or server: asked again once this instance's mark is written";
        }
      }
      await withinDeadline(this.mark.write(this.primary, primary, now), PROBE_DEADLINE_MS);
      this.samples.push({ at: now, lsn: parseLsn(primary.lsn) });
      // Keep the samples of the last stretch that can matter (past the lag limit, a replica is skipped anyway).
      const horizon = now - Math.max(2 * this.maxLagMs, 10_000);
      while (this.samples.length > 1 && this.samples[1]!.at < horizon) this.samples.shift();
    }
    await Promise.all(
      this.replicas.map(async (replica) => {
        const before = replica.state;
        // A replica's position may go back only when it was rebuilt: take its answer afresh.
        if (before !== 'ok' && before !== 'lagging') replica.replayed = 0n;
        if (await this.probe(replica, PROBE_DEADLINE_MS)) {
          replica.lastError = null;
          replica.lagS = this.lagOf(replica.replayed, performance.now());
          replica.state = replica.lagS * 1000 > this.maxLagMs ? 'lagging' : 'ok';
        }
        // From ok or lagging to down, the read path or the probe has told it already.
        if (replica.state !== before && !(replica.state === 'down' && (before === 'ok' || before === 'lagging'))) {
          const fields = { replica: replica.name, state: replica.state, was: before, lag_s: replica.lagS, error: replica.lastError ?? undefined };
          if (replica.state === 'ok') this.log.info(fields, 'replica serving reads');
          else this.log.warn(fields, 'replica skipped: reads go to the primary');
        }
      }),
    );
    if (now - this.lastCleanup >= POSITION_CLEANUP_MS) {
      this.lastCleanup = now;
      await withinDeadline(Promise.all([deleteOldPositions(this.primary), deleteOldMarks(this.primary, this.mark.token)]), PROBE_DEADLINE_MS);
    }
  }

  /**
   * Seconds since the primary was last at a position the replica has replayed: 0 when it has
   * replayed the latest sample; before the oldest sample kept, at least that old.
   */
  private lagOf(replayed: bigint, now: number): number {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const s = this.samples[i]!;
      if (s.lsn <= replayed) return i === this.samples.length - 1 ? 0 : (now - this.samples[i + 1]!.at) / 1000;
    }
    return this.samples.length === 0 ? 0 : (now - this.samples[0]!.at) / 1000;
  }
}
