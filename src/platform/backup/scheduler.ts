// Backups of the embedded environments by the running service (BACKUP_DIR): the service holds the
// data folders, so only it can copy them while it runs. One backup per environment every
// BACKUP_INTERVAL_MINUTES, written atomically, the newest BACKUP_KEEP kept. The outcome of the
// latest attempts is kept per environment in a BackupStatus, read by GET /admin/health (the
// database section) and by whatever else reports on the service (metrics).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { BackupConfig, EnvironmentName } from '../../config.js';
import type { PgliteDb } from '../db/pglite.js';
import { backupFileName, backupHeader, pruneBackups, writeBackupFile, type BackupHeader } from './file.js';

/** What the service knows of one environment's scheduled backups; updated in place. */
export interface BackupStatus {
  readonly intervalMs: number;
  /** When the newest backup that was written whole was taken, and where it is. */
  lastGoodAt: Date | null;
  lastGoodFile: string | null;
  /** The latest failed attempt, kept after a later success (compare the times). */
  lastErrorAt: Date | null;
  lastError: string | null;
}

/** One backup of a PGlite database into `path` (atomic); the header written with it. */
export async function backupPglite(environment: EnvironmentName, db: PgliteDb, path: string): Promise<BackupHeader> {
  const snapshot = await db.snapshot();
  const payload = new Uint8Array(await snapshot.tarball.arrayBuffer());
  const header = backupHeader(environment, snapshot, payload);
  await writeBackupFile(path, header, payload);
  return header;
}

export class BackupScheduler {
  private readonly targets = new Map<EnvironmentName, { db: PgliteDb; status: BackupStatus }>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly config: BackupConfig,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Schedules the environment's backups (the first one interval from now); returns its status. */
  add(environment: EnvironmentName, db: PgliteDb): BackupStatus {
    const status: BackupStatus = { intervalMs: this.config.intervalMs, lastGoodAt: null, lastGoodFile: null, lastErrorAt: null, lastError: null };
    this.targets.set(environment, { db, status });
    this.schedule();
    return status;
  }

  /** The environment's status, or undefined when the service does not back it up. */
  status(environment: EnvironmentName): BackupStatus | undefined {
    return this.targets.get(environment)?.status;
  }

  /** Backs up every environment now, one after the other; never throws (failures are recorded). */
  runOnce(): Promise<void> {
    this.running ??= this.backUpAll().finally(() => (this.running = undefined));
    return this.running;
  }

  /** No further backup starts; one under way is finished (its file is whole or absent) first. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.runOnce().then(() => this.schedule());
    }, this.config.intervalMs);
    // A pending backup never keeps the process alive (shutdown, tests).
    this.timer.unref();
  }

  private async backUpAll(): Promise<void> {
    for (const [environment, { db, status }] of this.targets) {
      if (this.stopped) return;
      const at = new Date();
      const file = join(this.config.dir, backupFileName(environment, at));
      const started = performance.now();
      try {
        await mkdir(this.config.dir, { recursive: true });
        const header = await backupPglite(environment, db, file);
        status.lastGoodAt = at;
        status.lastGoodFile = file;
        const pruned = await pruneBackups(this.config.dir, environment, this.config.keep);
        this.log.info(
          { environment, file, bytes: header.payload_bytes, schema_version: header.schema_version, ms: Math.round(performance.now() - started), pruned },
          'backup written',
        );
      } catch (err) {
        status.lastErrorAt = at;
        status.lastError = (err as Error).message;
        this.log.error({ err, environment, file }, 'backup failed');
      }
    }
  }
}
