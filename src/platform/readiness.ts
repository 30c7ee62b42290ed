// GET /ready: whether a load balancer should send this instance traffic. Each environment's
// database must answer one trivial statement (the applied migration versions, a table of a few
// dozen rows) within READY_TIMEOUT_MS, accept writes (not `read-only`: a standby, a primary made
// read-only, or no writable host of a multi-host URL yet) and have every migration this instance
// ships applied. Once
// shutdown begins the answer is 503 at once, before in-flight requests drain, so the balancer
// stops sending while they finish. GET / stays the liveness probe (no database).
import { ENVIRONMENTS, type EnvironmentName } from '../config.js';
import { READ_ONLY } from './db/host-choice.js';
import { loadMigrations, type Migration } from './db/migrate.js';
import { DbError } from './db/types.js';
import type { Environments } from './environments.js';
import { fromDbError } from './errors.js';

/** Each environment's check answers within this, whatever its database does. */
export const READY_TIMEOUT_MS = 1_000;

/** "ok", or what failed: "unavailable", "read-only", "timeout", "migrations pending: 0019_x.sql", "shutting down", "error: …". */
export type EnvironmentReadiness = string;

export interface ReadinessAnswer {
  ready: boolean;
  shuttingDown: boolean;
  environments: Record<EnvironmentName, EnvironmentReadiness>;
}

const fileName = (m: Migration) => `${String(m.version).padStart(4, '0')}_${m.name}.sql`;

export class Readiness {
  private stopping = false;
  private readonly expected: Migration[];
  // One statement in flight per environment however often the balancers probe: a hung database
  // does not collect a pooled connection per probe. A check older than the timeout is not joined.
  private readonly inFlight = new Map<EnvironmentName, { startedAt: number; check: Promise<EnvironmentReadiness> }>();

  constructor(
    private readonly environments: Environments,
    migrations: Migration[] = loadMigrations(),
  ) {
    this.expected = migrations;
  }

  /** Shutdown has begun: not ready from now on (the process entry calls this first on SIGTERM). */
  shutDown(): void {
    this.stopping = true;
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  async check(): Promise<ReadinessAnswer> {
    if (this.stopping) return this.answer(() => 'shutting down');
    const results = await Promise.all(ENVIRONMENTS.map((name) => this.checkBounded(name)));
    // Shutdown may have begun while the databases answered.
    if (this.stopping) return this.answer(() => 'shutting down');
    return this.answer((_, i) => results[i]!);
  }

  private answer(each: (name: EnvironmentName, index: number) => EnvironmentReadiness): ReadinessAnswer {
    const environments = Object.fromEntries(ENVIRONMENTS.map((name, i) => [name, each(name, i)])) as Record<EnvironmentName, EnvironmentReadiness>;
    return { ready: !this.stopping && Object.values(environments).every((s) => s === 'ok'), shuttingDown: this.stopping, environments };
  }

  private async checkBounded(name: EnvironmentName): Promise<EnvironmentReadiness> {
    const now = performance.now();
    let entry = this.inFlight.get(name);
    if (entry === undefined || now - entry.startedAt >= READY_TIMEOUT_MS) {
      const check = this.checkEnvironment(name).finally(() => {
        if (this.inFlight.get(name)?.check === check) this.inFlight.delete(name);
      });
      entry = { startedAt: now, check };
      this.inFlight.set(name, entry);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<EnvironmentReadiness>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), READY_TIMEOUT_MS);
    });
    try {
      return await Promise.race([entry.check, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async checkEnvironment(name: EnvironmentName): Promise<EnvironmentReadiness> {
    const env = this.environments.get(name);
    if (env === undefined) return 'unavailable';
    try {
      const { rows } = await env.db.query<{ read_only: string; versions: number[] }>(
        "select current_setting('transaction_read_only') as read_only, array(select version from schema_migrations) as versions",
      );
      if (rows[0]!.read_only === 'on') {
        // Not waiting for a write to fail on it: the next connections look for a writable host.
        env.db.reconnect();
        return 'read-only';
      }
      const applied = new Set(rows[0]!.versions.map(Number));
      const pending = this.expected.filter((m) => !applied.has(m.version));
      return pending.length === 0 ? 'ok' : `migrations pending: ${pending.map(fileName).join(', ')}`;
    } catch (err) {
      const dbError = DbError.from(err);
      if (dbError.code === READ_ONLY) return 'read-only';
      return fromDbError(dbError).statusCode === 503 ? 'unavailable' : `error: ${dbError.message}`;
    }
  }
}
