// Builds the real app on test databases: both environments, each on its own database.
import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { buildApp } from '../../src/app.js';
import { parseConfig, type Config, type EnvironmentName } from '../../src/config.js';
import { seedDemoOnFirstStart } from '../../src/demo/seed.js';
import { AUTH_CHANNEL } from '../../src/platform/auth/session-cache.js';
import type { Db } from '../../src/platform/db/types.js';
import { Environments, QUEUE_CHANNEL, type OpenDb } from '../../src/platform/environments.js';
import { Metrics } from '../../src/platform/metrics.js';
import type { HubOptions } from '../../src/realtime/hub.js';
import type { Broadcaster } from '../../src/training/broadcaster.js';
import { createTestDatabase, type TestDatabase } from './stores.js';

export const PRODUCTION_KEY = 'test-production-key-0123456789';
export const DEMO_KEY = 'test-demo-key-0123456789';
export const DASHBOARD_ORIGIN = 'https://dashboard.example.test';
export const TRAINING_ORIGIN = 'https://training.example.test';

export const silentLog = pino({ level: 'silent' });

export function testConfig(overrides: Record<string, string> = {}): Config {
  return parseConfig({
    DATA_DIR: ':memory:',
    LOG_LEVEL: 'silent',
    PRODUCTION_API_KEY: PRODUCTION_KEY,
    DEMO_API_KEY: DEMO_KEY,
    DASHBOARD_ORIGINS: DASHBOARD_ORIGIN,
    TRAINING_ORIGINS: TRAINING_ORIGIN,
    // Every request of a test comes from 127.0.0.1: the sign-in limit (30 a minute) is lifted here
    // and tested at its default in test/auth-signin-limit.test.ts.
    SIGNIN_RATE_LIMIT_PER_MINUTE: '1000000',
    // The run's setting (false through PgBouncer: .ci/run), unless a test sets its own.
    ...(process.env.DATABASE_PREPARED_STATEMENTS ? { DATABASE_PREPARED_STATEMENTS: process.env.DATABASE_PREPARED_STATEMENTS } : {}),
    ...overrides,
  });
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  environments: Environments;
  db: Record<EnvironmentName, Db>;
  /** The app's metrics, on when the env sets METRICS_PORT (as server.ts decides). */
  metrics: Metrics;
  /** Connection URLs of the databases (PostgreSQL only). */
  urls: Partial<Record<EnvironmentName, string>>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Open a database differently for one environment (e.g. an unreachable server). */
  openDb?: Partial<Record<EnvironmentName, OpenDb>>;
  /** Routes added to the API context (e.g. to exercise the error handler). */
  extend?: (api: FastifyInstance) => void | Promise<void>;
  /** The app's logger (silent by default). */
  logger?: Logger;
  /** The environments' logger (silent by default): what they log themselves (outages, the previous key). */
  environmentLogger?: Logger;
  /** Where live training events go (a recording one in the training tests). */
  broadcaster?: Broadcaster;
  /** Seal the audit chain in the background as the service does (off by default: rows and connections stay at rest). */
  sealing?: boolean;
  /** The realtime hub's options (a shorter join timeout). */
  hub?: HubOptions;
  /** How often the retention looks for closed cases (with RETENTION_DAYS in env). */
  retentionIntervalMs?: number;
}

export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const config = testConfig(options.env);
  const databases: Partial<Record<EnvironmentName, TestDatabase>> = {};
  // Opened by options.openDb: the environments close them; nothing to drop.
  const opened: Partial<Record<EnvironmentName, Db>> = {};
  const metrics = new Metrics(config.metricsPort !== undefined);
  const environments = await Environments.open(config, {
    log: options.environmentLogger ?? silentLog,
    metrics,
    retryMs: 100,
    onOpen: seedDemoOnFirstStart,
    sealing: options.sealing ?? false,
    openDb: async (env) => {
      const custom = options.openDb?.[env.name];
      if (custom) return (opened[env.name] = await custom(env));
      // The demo's database starts seeded, as after the service's first start (seeding it here
      // instead would cost every test app a third of a second). Seeded once per run, at its start:
      // the seed's times relative to "now" (a delivery due in 2 minutes, one claimed 2 minutes
      // ago) have aged by the time a late test opens it; a test that depends on them reseeds.
      databases[env.name] = await createTestDatabase({ preparedStatements: config.databasePreparedStatements, demo: env.name === 'demo' });
      return databases[env.name]!.db;
    },
  });
  const app = await buildApp({ config, environments, ownsEnvironments: false, logger: options.logger ?? silentLog, extraRoutes: options.extend, broadcaster: options.broadcaster, metrics, hub: options.hub, retentionIntervalMs: options.retentionIntervalMs });
  if (KEYED) keyEveryRequest(app);
  await app.ready();
  return {
    app,
    config,
    environments,
    db: { production: databases.production?.db ?? opened.production, demo: databases.demo?.db ?? opened.demo } as Record<EnvironmentName, Db>,
    metrics,
    urls: { production: databases.production?.url, demo: databases.demo?.url },
    async close() {
      await app.close();
      await environments.close().catch(() => undefined);
      await Promise.all(Object.values(databases).map((d) => d.drop()));
    },
  };
}

/**
 * TEST_IDEMPOTENCY_KEYS=1 (a step of .ci/run): every request the suite sends without an
 * Idempotency-Key gets a fresh one, as the README's bot sends them. A first request with a key
 * must behave exactly as the same request without (issue 41), and the whole suite says so: every
 * route, status and row it asserts, keyed.
 */
const KEYED = process.env.TEST_IDEMPOTENCY_KEYS === '1';
let keys = 0;
function keyEveryRequest(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.headers['idempotency-key'] === undefined) request.headers['idempotency-key'] = `suite-${process.pid}-${++keys}`;
  });
}

let sentinels = 0;
/**
 * Resolves once the app has heard every auth notification committed before this call: a sentinel
 * notified after them arrives after them (PostgreSQL delivers in commit order). Used after writes
 * made behind the app's back, as another instance or process would make them.
 */
export async function authNotificationsDelivered(t: TestApp, env: EnvironmentName = 'production'): Promise<void> {
  const sessions = t.environments.get(env)!.sessions;
  const sentinel = `sentinel-${process.pid}-${++sentinels}`;
  const heard = new Promise<void>((resolve) => {
    const original = sessions.invalidate.bind(sessions);
    sessions.invalidate = (chatId: string) => {
      original(chatId);
      if (chatId === sentinel) {
        sessions.invalidate = original;
        resolve();
      }
    };
  });
  await t.environments.get(env)!.db.query('select pg_notify($1::text, $2::text)', [AUTH_CHANNEL, sentinel]);
  await heard;
}

/**
 * Resolves once the app has heard every queue notification committed before this call: a test
 * that writes queue rows behind the app's back (as another instance would) and then polls needs
 * the app to know, as it would a few milliseconds later in production. One listening connection
 * delivers in commit order, to the app's subscriber before this one.
 */
export async function queueNotificationsDelivered(t: TestApp, env: EnvironmentName = 'production'): Promise<void> {
  const db = t.environments.get(env)!.db;
  const sentinel = `sentinel-${process.pid}-${++sentinels}`;
  let heard!: () => void;
  const arrived = new Promise<void>((resolve) => (heard = resolve));
  const unlisten = await db.listen(QUEUE_CHANNEL, { onNotify: (payload) => payload === sentinel && heard() });
  try {
    await db.query('select pg_notify($1::text, $2::text)', [QUEUE_CHANNEL, sentinel]);
    await arrived;
  } finally {
    await unlisten();
  }
}
