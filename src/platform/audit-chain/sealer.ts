// The sealer of one environment on this instance (issue 21): every `intervalMs` it seals what can
// be sealed (seal.ts); every instance runs one and the advisory lock lets one work at a time, so
// sealing goes on while instances start and stop. It writes the checkpoint (the chain's row count
// and head hash) to the log at start, every hour and at stop: an operator who keeps those lines
// elsewhere can prove later that the chain still extends them (verify-audit --against).
import type { FastifyBaseLogger } from 'fastify';
import type { EnvironmentName } from '../../config.js';
import type { Db } from '../db/types.js';
import { withinDeadline } from '../deadline.js';
import type { ChainHead } from './hashes.js';
import { readHead, sealAvailable } from './seal.js';

export const CHECKPOINT_EVERY_MS = 60 * 60 * 1000;
export const STOP_DEADLINE_MS = 5_000;

export interface SealerStatus {
  /** The head as this instance last saw it (after its own batch, or read when another sealed). */
  head: ChainHead | null;
  /** When this instance last finished a sealing pass, whoever held the lock. */
  lastPassAt: Date | null;
  /** Rows this instance sealed since it started. */
  sealedHere: number;
  /** The last failed pass (kept after later successes: compare the times). */
  lastErrorAt: Date | null;
  lastError: string | null;
}

export class AuditSealer {
  readonly status: SealerStatus = { head: null, lastPassAt: null, sealedHere: 0, lastErrorAt: null, lastError: null };
  private timer: NodeJS.Timeout | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly environment: EnvironmentName,
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs: number,
  ) {}

  /**
   * Logs the startup checkpoint, then seals in the background at once and every interval: a
   * backlog (the first start on a database full of events) never holds the boot.
   */
  async start(): Promise<void> {
    await this.checkpoint('startup');
    this.schedule(0);
    this.checkpointTimer = setInterval(() => void this.checkpoint('hourly'), CHECKPOINT_EVERY_MS);
    this.checkpointTimer.unref();
  }

  /** One pass now (also what the timer runs); never throws, failures are logged and kept. */
  pass(): Promise<void> {
    this.running ??= this.sealNow().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * The last pass, then the shutdown checkpoint; no pass starts after this. A database that does
   * not answer cannot hold the shutdown: after STOP_DEADLINE_MS it goes on without them (rows left
   * unsealed are sealed by the next sealer, here or on another instance).
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.checkpointTimer);
    const last = async () => {
      await this.running;
      await this.sealNow();
      await this.checkpoint('shutdown');
      return true;
    };
    if ((await withinDeadline(last(), STOP_DEADLINE_MS)) === undefined) {
      this.log.warn({ environment: this.environment }, `audit chain: the shutdown pass and checkpoint did not finish within ${STOP_DEADLINE_MS} ms; the next sealer seals what is left`);
    }
  }

  private schedule(delayMs = this.intervalMs): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pass().then(() => this.schedule()), delayMs);
    this.timer.unref();
  }

  private async sealNow(): Promise<void> {
    try {
      const result = await sealAvailable(this.db);
      this.status.sealedHere += result.sealed;
      this.status.head = result.head;
      this.status.lastPassAt = new Date();
    } catch (err) {
      this.status.lastErrorAt = new Date();
      this.status.lastError = (err as Error).message;
      this.log.error({ err, environment: this.environment }, 'audit chain: sealing failed; retrying at the next interval');
    }
  }

  private async checkpoint(when: 'startup' | 'hourly' | 'shutdown'): Promise<void> {
    try {
      const head = await readHead(this.db);
      this.status.head = head;
      this.log.info({ environment: this.environment, audit_checkpoint: { rows: head.rows, head_hash: head.hash, when } }, `audit checkpoint: ${this.environment} ${head.rows} rows, head ${head.hash}`);
    } catch (err) {
      this.log.error({ err, environment: this.environment }, `audit chain: the ${when} checkpoint could not be read`);
    }
  }
}
