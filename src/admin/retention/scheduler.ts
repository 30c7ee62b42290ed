// The retention's schedule (RETENTION_DAYS): every instance runs one, as every instance runs an
// audit sealer (src/platform/audit-chain/sealer.ts), and a PostgreSQL advisory lock lets one work
// at a time. A pass erases at most RETENTION_BATCH closed cases, one transaction each, so a
// backlog never holds the sealer's lock (which an erasure of sealed rows takes) for long. The
// production environment only: the demo's fictional cases are left as they are.
import type { FastifyBaseLogger } from 'fastify';
import type { Environment } from '../../platform/environments.js';
import { environmentPseudonymKey } from '../subjects/subject-key.js';
import { countWaiting, eraseClosedCase, nextClosedCase } from './cases.js';

/** How often each instance looks for closed cases past the retention. */
export const RETENTION_INTERVAL_MS = 5 * 60 * 1000;
/** Cases erased per pass at most: the next ones wait for the next pass. */
export const RETENTION_BATCH = 20;
/** The retention's advisory lock: one instance erasing at a time per database. */
export const RETENTION_LOCK_KEY = 4_207_110_932;
/** Cases waiting are counted up to this (health's counts stop at 10,000 too). */
const WAITING_CAP = 10_000;

export interface RetentionStatus {
  /** When this instance last finished a pass (whoever held the lock). */
  lastRunAt: Date | null;
  /** Cases this instance erased since it started. */
  casesErased: number;
  /** Closed cases past the retention not erased yet, as the last pass left them (held ones included). */
  casesWaiting: number | null;
  /** Of those, the ones the last pass of this instance skipped for a punishment in force. */
  casesHeld: number | null;
  lastErrorAt: Date | null;
  lastError: string | null;
}

export interface RetentionOptions {
  /** RETENTION_DAYS; undefined: nothing is ever erased for its age. */
  days: number | undefined;
  /** The open production environment, or undefined while its database is unavailable. */
  production: () => Environment | undefined;
  log: FastifyBaseLogger;
  intervalMs?: number;
  batch?: number;
}

export class RetentionScheduler {
  readonly status: RetentionStatus = { lastRunAt: null, casesErased: 0, casesWaiting: null, casesHeld: null, lastErrorAt: null, lastError: null };
  readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: RetentionOptions) {
    this.intervalMs = options.intervalMs ?? RETENTION_INTERVAL_MS;
  }

  get days(): number | undefined {
    return this.options.days;
  }

  /** Passes from one interval after now; nothing at all without RETENTION_DAYS. */
  start(): void {
    if (this.options.days !== undefined) this.schedule();
  }

  /** One pass now (also what the timer runs); never throws, failures are logged and kept. */
  pass(): Promise<void> {
    this.running ??= this.runPass().finally(() => (this.running = undefined));
    return this.running;
  }

  /** No pass starts after this; the one under way finishes (each case is its own transaction). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pass().then(() => this.schedule()), this.intervalMs);
    this.timer.unref();
  }

  private async runPass(): Promise<void> {
    const days = this.options.days;
    const env = this.options.production();
    if (days === undefined || env === undefined || this.stopped) return;
    try {
      const key = await environmentPseudonymKey(env);
      const skip: string[] = [];
      let erased = 0;
      let held = 0;
      const rows: Record<string, number> = {};
      for (let i = 0; i < (this.options.batch ?? RETENTION_BATCH) && !this.stopped; i++) {
        let current: string | undefined;
        const outcome = await env.db
          .transaction(async (tx) => {
            const { rows: lock } = await tx.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1::bigint) as locked', [RETENTION_LOCK_KEY]);
            if (!lock[0]!.locked) return 'elsewhere' as const;
            const next = await nextClosedCase(tx, days, skip);
            if (next === null) return 'done' as const;
            current = next.reportId;
            return eraseClosedCase(tx, key, next, days);
          })
          .catch((err: unknown) => {
            // One case that cannot be erased (a sealed row edited behind the service's back) is
            // passed over, logged and kept in the status; anything else ends the pass.
            if (current === undefined) throw err;
            this.failed(env.name, err, `retention: closed case ${current} could not be erased; passed over until the next pass`);
            return 'failed' as const;
          });
        if (outcome === 'elsewhere' || outcome === 'done') break;
        if (outcome === 'failed' || !outcome.erased) {
          skip.push(current!);
          if (outcome !== 'failed') held++;
          continue;
        }
        erased++;
        for (const [table, n] of Object.entries(outcome.counts)) rows[table] = (rows[table] ?? 0) + n;
      }
      Object.assign(this.status, { casesWaiting: await countWaiting(env.db, days, WAITING_CAP), casesHeld: held, lastRunAt: new Date() });
      this.status.casesErased += erased;
      if (erased > 0) {
        this.options.log.info(
          { environment: env.name, retention: { days, cases_erased: erased, cases_held: held, cases_waiting: this.status.casesWaiting, rows } },
          `retention: ${erased} closed case(s) older than ${days} days erased, ${this.status.casesWaiting} waiting`,
        );
      }
    } catch (err) {
      this.failed(env.name, err, 'retention: the pass failed; retrying at the next interval');
    }
  }

  private failed(environment: string, err: unknown, message: string): void {
    this.status.lastErrorAt = new Date();
    this.status.lastError = (err as Error).message;
    this.options.log.error({ err, environment }, message);
  }
}
