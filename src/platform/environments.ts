// Production and demo, each with its own database, key and secrets, open side by side. A request
// is resolved to one of them by its Host header; an unknown host resolves to none (fail closed).
// Each database is opened and wrapped in environment-db.ts; the series in environment-metrics.ts.
import type { FastifyBaseLogger } from 'fastify';
import { ENVIRONMENTS, type Config, type EnvironmentConfig, type EnvironmentName } from '../config.js';
import { AuditSealer, type SealerStatus } from './audit-chain/sealer.js';
import { ApiKeys } from './auth/api-key.js';
import { AUTH_CHANNEL, SessionCache } from './auth/session-cache.js';
import { BackupScheduler, type BackupStatus } from './backup/scheduler.js';
import { ChangeCache } from './cache/change-cache.js';
import { migrate } from './db/migrate.js';
import type { DbObservation } from './db/observe.js';
import { warnIfJitOn } from './db/pooler.js';
import { ReplicaSet } from './db/replicas.js';
import type { Db } from './db/types.js';
import { defaultOpenDb, environmentDb, isPglite, isUnreachable, type OpenDb } from './environment-db.js';
import { observeEnvironments } from './environment-metrics.js';
import type { Metrics } from './metrics.js';

export { defaultOpenDb, type OpenDb } from './environment-db.js';

export interface Environment {
  readonly name: EnvironmentName;
  readonly config: EnvironmentConfig;
  readonly db: Db;
  /** The bot's key (and during a rotation the previous one), with the previous key's uses counted. */
  readonly apiKeys: ApiKeys;
  /** Resolved sessions, cleared through database notifications (see session-cache.ts). */
  readonly sessions: SessionCache;
  /** Bot queues known to have nothing to hand out, and until when (see queue/idle.ts). */
  readonly idleQueues: ChangeCache<true>;
  /** Claimed queue items older than this are swept back (QUEUE_STALE_TIMEOUT_SECONDS). */
  readonly staleTimeoutMs: number;
  /**
   * A schema reload on this instance: drops every cache above and the prepared statements of the
   * pooled connections, so a schema changed out of band is picked up without a restart. Run by
   * POST /admin/schema/reload at once and on every instance hearing SCHEMA_RELOAD_CHANNEL.
   */
  reloadSchema(): void;
  /** Its scheduled backups (BACKUP_DIR, embedded store only), updated in place; null when none. */
  readonly backup: BackupStatus | null;
  /** This instance's sealer of the audit hash chain (src/platform/audit-chain), updated in place. */
  readonly sealing: SealerStatus;
  /**
   * The streaming replicas that serve this environment's reads (<ENV>_DATABASE_REPLICA_URLS), or
   * undefined when none are configured. Routes read through `readDb(request)`, never this directly.
   */
  readonly replicas: ReplicaSet | undefined;
  /** DATA_DIR: the embedded stores' folders, and what is kept beside them (the pseudonym key files). */
  readonly dataDir: string;
}

export const QUEUE_CHANNEL = 'cms_queue_changed';
/** Training broadcasts on their way to every instance's realtime hub (src/realtime/fanout.ts). */
export const REALTIME_CHANNEL = 'cms_realtime';
/** Notified by POST /admin/schema/reload (payload: its correlation id); nothing else sends it. */
export const SCHEMA_RELOAD_CHANNEL = 'cms_schema_reload';

/** A cache that is live while its channel is heard and cleared by every notification on it. */
function clearedBy(db: Db, channel: string, cache: ChangeCache<unknown>) {
  return db.listen(channel, {
    onNotify: () => cache.clear(),
    onReady: () => cache.setLive(true),
    onLost: () => cache.setLive(false),
  });
}

/**
 * Runs on an environment's database once it is migrated, before it listens or serves (the demo
 * seed on first start). The caller wires it: the platform knows no domain (src/server.ts).
 */
export type OnEnvironmentOpen = (name: EnvironmentName, db: Db, log: FastifyBaseLogger) => Promise<void>;

export interface OpenEnvironmentsOptions {
  log: FastifyBaseLogger;
  /** How to open a database; the default follows the config (PostgreSQL URL, else PGlite). */
  openDb?: OpenDb;
  retryMs?: number;
  onOpen?: OnEnvironmentOpen;
  /** Where the database series go (pools, transaction time, failures); observed only when enabled. */
  metrics?: Metrics;
  /**
   * Seal the audit chain in the background (default true; the service always does). Tests that
   * count connections or rows at rest open without it and seal when they mean to.
   */
  sealing?: boolean;
}

export class Environments {
  private readonly ready = new Map<EnvironmentName, Environment>();
  private readonly hosts = new Map<string, EnvironmentName>();
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly sealers = new Map<EnvironmentName, AuditSealer>();
  private readonly replicaSets = new Map<EnvironmentName, ReplicaSet>();
  private readonly keys: Record<EnvironmentName, ApiKeys>;
  private closed = false;
  private realtimeHandler: ((environment: EnvironmentName, db: Db, payload: string) => void) | undefined;
  /** Each environment's database observation when metrics are on. */
  private readonly observation: ((environment: string) => DbObservation) | undefined;
  /** The service's backups of its embedded environments; undefined without BACKUP_DIR. */
  readonly backups: BackupScheduler | undefined;

  /** Who hears the realtime notifications of every environment (the hub's fan-out). */
  onRealtime(handler: (environment: EnvironmentName, db: Db, payload: string) => void): void {
    this.realtimeHandler = handler;
  }

  private constructor(
    private readonly config: Config,
    private readonly options: Required<Omit<OpenEnvironmentsOptions, 'metrics'>>,
    metrics: Metrics | undefined,
  ) {
    for (const name of ENVIRONMENTS) for (const host of config.environments[name].hosts) this.hosts.set(host, name);
    // Held here rather than per opened database: the counts outlive an outage of the environment.
    this.keys = { production: new ApiKeys(config.environments.production, options.log), demo: new ApiKeys(config.environments.demo, options.log) };
    this.backups = config.backup ? new BackupScheduler(config.backup, options.log) : undefined;
    if (metrics) {
      this.observation = observeEnvironments(metrics, { ready: () => this.ready.values(), keys: this.keys, replicaSets: this.replicaSets, backups: this.backups });
    }
  }

  /**
   * Opens and migrates both databases. An unreachable PostgreSQL does not stop the boot: that
   * environment answers 503 and is retried in the background. Anything else (a locked embedded
   * folder, a failing migration) is thrown: the process must not serve a broken deployment.
   */
  static async open(config: Config, options: OpenEnvironmentsOptions): Promise<Environments> {
    const envs = new Environments(config, {
      openDb: options.openDb ?? defaultOpenDb(config, options.log),
      retryMs: options.retryMs ?? 5000,
      log: options.log,
      onOpen: options.onOpen ?? (async () => undefined),
      sealing: options.sealing ?? true,
    }, options.metrics);
    try {
      await Promise.all(ENVIRONMENTS.map((name) => envs.tryOpen(name)));
    } catch (err) {
      await envs.close();
      throw err;
    }
    return envs;
  }

  /** The environment a Host header resolves to, or undefined (unknown or missing host). */
  resolveHost(host: string | undefined): EnvironmentName | undefined {
    const name = normaliseHost(host);
    return name === undefined ? undefined : this.hosts.get(name);
  }

  /**
   * An environment's API keys, open or not. `apiKeys(name).previousKeyUses` is the number of
   * requests this instance authenticated with `<ENV>_API_KEY_PREVIOUS` (what a metric reports).
   */
  apiKeys(name: EnvironmentName): ApiKeys {
    return this.keys[name];
  }

  /** The open environment, or undefined while its database is unavailable. */
  get(name: EnvironmentName): Environment | undefined {
    return this.ready.get(name);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.retries.forEach(clearTimeout);
    this.retries.clear();
    await this.backups?.stop();
    // Each sealer's last pass and shutdown checkpoint, on its still open database.
    await Promise.all([...this.sealers.values()].map((sealer) => sealer.stop()));
    this.sealers.clear();
    await Promise.all([...this.replicaSets.values()].map((replicas) => replicas.close()));
    this.replicaSets.clear();
    const open = [...this.ready.values()];
    this.ready.clear();
    await Promise.all(open.map((env) => env.db.close()));
  }

  private async tryOpen(name: EnvironmentName): Promise<void> {
    const envConfig = this.config.environments[name];
    const sessions = new SessionCache();
    const idleQueues = new ChangeCache<true>(10_000);
    let db: Db | undefined;
    const reloadSchema = () => {
      sessions.clear();
      idleQueues.clear();
      db?.resetStatements();
    };
    try {
      db = await this.options.openDb(envConfig);
      await db.direct((session) => migrate(session, undefined, { log: this.options.log.child({ environment: name }) }));
      await warnIfJitOn(db, envConfig, this.options.log);
      await this.options.onOpen(name, db, this.options.log);
      await db.listen(AUTH_CHANNEL, {
        onNotify: (chatId) => sessions.invalidate(chatId),
        onReady: () => sessions.setLive(true),
        onLost: () => sessions.setLive(false),
      });
      await clearedBy(db, QUEUE_CHANNEL, idleQueues);
      const opened = db;
      await db.listen(REALTIME_CHANNEL, { onNotify: (payload) => this.realtimeHandler?.(name, opened, payload) });
      // A reload sent while this instance was not listening is made up for once it listens again
      // (the caches above are off meanwhile; the prepared statements are not).
      let missed = false;
      await db.listen(SCHEMA_RELOAD_CHANNEL, {
        onNotify: (correlationId) => {
          this.options.log.info({ environment: name, correlation_id: correlationId }, 'schema reload: caches and prepared statements dropped');
          reloadSchema();
        },
        onReady: () => {
          if (missed) db?.resetStatements();
          missed = false;
        },
        onLost: () => (missed = true),
      });
    } catch (err) {
      await db?.close().catch(() => undefined);
      if (!isUnreachable(err)) throw err;
      this.options.log.error({ err, environment: name }, 'database unreachable; environment unavailable, retrying');
      this.scheduleRetry(name);
      return;
    }
    if (this.closed) return void (await db.close());
    const sealer = new AuditSealer(name, db, this.options.log, this.config.auditSealIntervalMs);
    if (this.options.sealing) {
      this.sealers.set(name, sealer);
      await sealer.start();
    }
    let replicas: ReplicaSet | undefined;
    if (envConfig.replicaUrls.length > 0) {
      replicas = new ReplicaSet({
        primary: db,
        urls: envConfig.replicaUrls,
        maxLagSeconds: this.config.replicaMaxLagMs / 1000,
        poolSize: this.config.databasePoolSize,
        preparedStatements: this.config.databasePreparedStatements,
        applicationName: `case-management-service:${name}`,
        onIdleError: (err) => this.options.log.error({ err, environment: name }, 'idle replica connection failed'),
        log: this.options.log.child({ environment: name }),
      });
      this.replicaSets.set(name, replicas);
      // Never fails: a replica that is not there yet is down, and reads go to the primary.
      await replicas.start();
    }
    let backup: BackupStatus | null = null;
    if (this.backups && isPglite(db)) backup = this.backups.add(name, db);
    else if (this.backups) this.options.log.warn({ environment: name }, 'BACKUP_DIR: this environment is on PostgreSQL and is not backed up by the service; use pg_dump or pg_basebackup (docs/operations.md)');
    this.ready.set(name, {
      name,
      config: envConfig,
      db: environmentDb(db, () => idleQueues.clear(), this.observation?.(name)),
      apiKeys: this.keys[name],
      sessions,
      idleQueues,
      staleTimeoutMs: this.config.queueStaleTimeoutMs,
      reloadSchema,
      backup,
      sealing: sealer.status,
      replicas,
      dataDir: this.config.dataDir,
    });
    this.options.log.info({ environment: name, store: db.kind }, 'environment ready');
  }

  private scheduleRetry(name: EnvironmentName): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.tryOpen(name).catch((err) => {
        this.options.log.error({ err, environment: name }, 'environment failed to open');
        this.scheduleRetry(name);
      });
    }, this.options.retryMs);
    timer.unref();
    this.retries.add(timer);
  }
}

/** Lowercase host name without port or trailing dot; IPv6 literals keep their brackets. */
export function normaliseHost(host: string | undefined): string | undefined {
  if (!host) return undefined;
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) {
    const end = name.indexOf(']');
    return end > 0 ? name.slice(0, end + 1) : undefined;
  }
  const colon = name.indexOf(':');
  if (colon >= 0) name = name.slice(0, colon);
  if (name.endsWith('.')) name = name.slice(0, -1);
  return name === '' ? undefined : name;
}
