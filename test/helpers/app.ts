// Builds the real app on test databases: both environments, each on its own database.
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { parseConfig, type Config, type EnvironmentName } from '../../src/config.js';
import type { Db } from '../../src/platform/db/types.js';
import { Environments, type OpenDb } from '../../src/platform/environments.js';
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
    ...overrides,
  });
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  db: Record<EnvironmentName, Db>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Open a database differently for one environment (e.g. an unreachable server). */
  openDb?: Partial<Record<EnvironmentName, OpenDb>>;
  /** Routes added to the API context (e.g. to exercise the error handler). */
  extend?: (api: FastifyInstance) => void | Promise<void>;
}

export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const config = testConfig(options.env);
  const databases: Partial<Record<EnvironmentName, TestDatabase>> = {};
  const environments = await Environments.open(config, {
    log: silentLog,
    retryMs: 100,
    openDb: async (env) => {
      const custom = options.openDb?.[env.name];
      if (custom) return custom(env);
      databases[env.name] = await createTestDatabase();
      return databases[env.name]!.db;
    },
  });
  const app = await buildApp({ config, environments, ownsEnvironments: false, logger: silentLog, extraRoutes: options.extend });
  await app.ready();
  return {
    app,
    config,
    db: { production: databases.production?.db, demo: databases.demo?.db } as Record<EnvironmentName, Db>,
    async close() {
      await app.close();
      await environments.close().catch(() => undefined);
      await Promise.all(Object.values(databases).map((d) => d.drop()));
    },
  };
}
