// GET /ready (issue 20): 200 when each environment's database answers within 1 s and has every
// migration applied; otherwise 503 naming what failed per environment, within its bound whatever
// the database does. GET / stays the liveness probe. (After SIGTERM: test/platform/readiness-shutdown.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBuildInfo } from '../src/platform/build-info.js';
import { loadMigrations } from '../src/platform/db/migrate.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { DbError, type Db } from '../src/platform/db/types.js';
import { READY_TIMEOUT_MS } from '../src/platform/readiness.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { createTestDatabase, type TestDatabase } from './helpers/stores.js';

// Every answer, ready or not, names the build answering (src/platform/build-info.ts).
const { version, commit } = readBuildInfo();

const ready = async (t: TestApp, host = 'localhost') => {
  const started = performance.now();
  const res = await t.app.inject({ url: '/ready', headers: { host } });
  return { res, body: res.json(), ms: performance.now() - started };
};

/** A database whose plain statements can be made to hang for good, or to fail as a lost server does. */
function faulty(db: Db): Db & { mode: 'ok' | 'hang' | 'refuse'; queries: number } {
  const wrapper: Db & { mode: 'ok' | 'hang' | 'refuse'; queries: number } = {
    ...db,
    mode: 'ok',
    queries: 0,
    query: (text, values, options) => {
      wrapper.queries++;
      if (wrapper.mode === 'hang') return new Promise<never>(() => undefined);
      if (wrapper.mode === 'refuse') return Promise.reject(new DbError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', undefined, undefined));
      return db.query(text, values, options);
    },
  };
  return wrapper;
}

describe('GET /ready with both databases up and migrated', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('200 naming each environment ok, not cached, for any host (no environment resolution)', async () => {
    for (const host of ['localhost', 'demo.localhost', 'balancer.internal']) {
      const { res, body } = await ready(t, host);
      expect(res.statusCode).toBe(200);
      expect(body).toEqual({ success: true, version, commit, environments: { production: 'ok', demo: 'ok' } });
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('503 naming the environment and the file when a migration is pending', async () => {
    const last = loadMigrations().at(-1)!;
    const file = `${String(last.version).padStart(4, '0')}_${last.name}.sql`;
    const { rows } = await t.db.demo.query('delete from schema_migrations where version = $1::int returning version', [last.version]);
    expect(rows).toHaveLength(1);
    const { res, body } = await ready(t);
    expect(res.statusCode).toBe(503);
    expect(body).toEqual({
      success: false,
      error: `Not ready: demo migrations pending: ${file}`,
      code: 'NOT_READY',
      version,
      commit,
      environments: { production: 'ok', demo: `migrations pending: ${file}` },
    });
    // The liveness probe is not concerned.
    expect((await t.app.inject({ url: '/' })).statusCode).toBe(200);
  });
});

describe('GET /ready with an environment down or hung', () => {
  let t: TestApp;
  let database: TestDatabase;
  let production: ReturnType<typeof faulty>;
  beforeAll(async () => {
    database = await createTestDatabase();
    production = faulty(database.db);
    t = await createTestApp({
      openDb: {
        production: async () => production,
        // Nothing listens on port 1: demo is unreachable at boot and stays so (retried meanwhile).
        demo: async () => openPostgres({ connectionString: 'postgres://nobody@127.0.0.1:1/none' }),
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  it('503 naming the unreachable environment; the other is ok; GET / still 200', async () => {
    const { res, body } = await ready(t);
    expect(res.statusCode).toBe(503);
    expect(body).toEqual({ success: false, error: 'Not ready: demo unavailable', code: 'NOT_READY', version, commit, environments: { production: 'ok', demo: 'unavailable' } });
    const live = await t.app.inject({ url: '/' });
    expect(live.statusCode).toBe(200);
    expect(live.body).toBe('Case Management Service API Online');
  });

  it('a database lost after boot is unavailable', async () => {
    production.mode = 'refuse';
    try {
      const { res, body } = await ready(t);
      expect(res.statusCode).toBe(503);
      expect(body.environments).toEqual({ production: 'unavailable', demo: 'unavailable' });
      expect(body.error).toBe('Not ready: production unavailable; demo unavailable');
    } finally {
      production.mode = 'ok';
    }
  });

  it(`a database that never answers: 503 "timeout" within ${READY_TIMEOUT_MS} ms, one statement however many probes, then ok again`, async () => {
    production.mode = 'hang';
    const before = production.queries;
    const probes = await Promise.all(Array.from({ length: 5 }, () => ready(t)));
    production.mode = 'ok';
    for (const { res, body, ms } of probes) {
      expect(res.statusCode).toBe(503);
      expect(body).toEqual({ success: false, error: 'Not ready: production timeout; demo unavailable', code: 'NOT_READY', version, commit, environments: { production: 'timeout', demo: 'unavailable' } });
      expect(ms).toBeGreaterThanOrEqual(READY_TIMEOUT_MS - 50);
      expect(ms).toBeLessThan(READY_TIMEOUT_MS + 500);
    }
    // The five concurrent probes shared one statement: a hung database does not collect one per probe.
    expect(production.queries - before).toBe(1);
    // The hung statement never settles; the next probe, past the bound, asks afresh.
    const after = await ready(t);
    expect(after.body.environments).toEqual({ production: 'ok', demo: 'unavailable' });
    expect(production.queries - before).toBe(2);
  });
});
