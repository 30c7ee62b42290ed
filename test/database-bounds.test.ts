// Bounds on every database call (issue 40): a server that stops answering without closing anything,
// one that never answers at all, a statement stuck behind a lock, a full server. Each answers 503
// DATABASE_UNAVAILABLE within its bound (never 500, never a request that hangs), the boot goes on
// without the environment, and the service recovers by itself once the server is back. The frozen
// server is a proxy that stops forwarding (test/helpers/tcp-proxy.ts); the rest is PostgreSQL
// itself. How the failures map to answers holds on both stores; the rest needs a server.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOpenDb } from '../src/platform/environment-db.js';
import { toDbError } from '../src/platform/db/host-choice.js';
import { DbError } from '../src/platform/db/types.js';
import { fromDbError } from '../src/platform/errors.js';
import { createTestApp, PRODUCTION_KEY, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { createTestDatabase, onPostgres, storeName, type TestDatabase } from './helpers/stores.js';
import { freezableProxy, type FreezableProxy } from './helpers/tcp-proxy.js';

const UNAVAILABLE = { success: false, error: expect.stringMatching(/^Database unavailable: /), code: 'DATABASE_UNAVAILABLE' };
/** An environment whose database has not opened yet (it is retried meanwhile). */
const NOT_OPEN = { success: false, error: 'Environment unavailable: production', code: 'ENVIRONMENT_UNAVAILABLE' };
let n = 0;
const create = (t: TestApp) =>
  t.app.inject({
    method: 'POST',
    url: '/reports/create',
    headers: { authorization: PRODUCTION_KEY },
    payload: { report_id: `BND-${process.pid}-${++n}`, reporter: chatId(), reported: chatId(), reason: 'Bounds', notes: 'n', evidence: 'e' },
  });

describe(`database failures as answers, on ${storeName}`, () => {
  it.each([
    ['53300', 'too many connections for role "cms"'],
    ['EAI_AGAIN', 'getaddrinfo EAI_AGAIN db.internal'],
    ['ENETUNREACH', 'connect ENETUNREACH 10.0.0.5:5432'],
    ['08007', 'commit not acknowledged by the synchronous standby'],
  ])('%s is 503 DATABASE_UNAVAILABLE, not 500', (code, message) => {
    const answer = fromDbError(new DbError(message, code, undefined, undefined));
    expect({ status: answer.statusCode, code: answer.code }).toEqual({ status: 503, code: 'DATABASE_UNAVAILABLE' });
  });

  it("pg-pool's connect timeout is a lost connection (503), not a database error", () => {
    const err = toDbError(new Error('timeout exceeded when trying to connect'));
    expect(err.code).toBe('08006');
    expect(fromDbError(err).statusCode).toBe(503);
  });
});

describe.runIf(onPostgres)('bounds on PostgreSQL', () => {
  /** An app whose production database is opened as the service opens it, with these settings. */
  const appOn = (url: string, env: Record<string, string> = {}) => {
    const config = testConfig({ PRODUCTION_DATABASE_URL: url, ...env });
    return createTestApp({ env: { PRODUCTION_DATABASE_URL: url, ...env }, openDb: { production: (e) => defaultOpenDb(config, silentLog)(e) } });
  };

  /**
   * A database of its own with a login role of its own (`setUp` gives it what it needs), for `use`
   * as that role's URL; the role and database go afterwards.
   */
  async function asRole(name: string, setUp: (admin: pg.Client, role: string) => Promise<void>, use: (url: string, admin: pg.Client, role: string) => Promise<void>) {
    const database = await createTestDatabase();
    const role = `cms_${name}_${process.pid}_${++n}`;
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await setUp(admin, role);
    const url = new URL(database.url!);
    url.username = role;
    try {
      await use(url.toString(), admin, role);
    } finally {
      await admin.query(`drop owned by ${role}`).catch(() => undefined);
      await admin.end();
      await database.drop();
      const cleanup = new pg.Client({ connectionString: database.url!.replace(/\/[^/]*$/, '/test') });
      await cleanup.connect();
      await cleanup.query(`drop role if exists ${role}`).catch(() => undefined);
      await cleanup.end();
    }
  }

  describe('a server that stops answering', () => {
    let database: TestDatabase;
    let proxy: FreezableProxy;
    let t: TestApp;
    beforeAll(async () => {
      database = await createTestDatabase();
      const url = new URL(database.url!);
      proxy = await freezableProxy({ host: url.hostname, port: Number(url.port || 5432) });
      t = await appOn(proxy.through(database.url!), { DATABASE_CONNECT_TIMEOUT_MS: '500' });
    });
    afterAll(async () => {
      proxy.thaw();
      await t?.close();
      await proxy.close();
      await database.drop();
    });

    it('answers 503 within a few connect timeouts instead of hanging, writes nothing, and serves again once it answers', async () => {
      expect((await create(t)).statusCode).toBe(201);
      proxy.freeze();
      const started = performance.now();
      const res = await create(t);
      const ms = performance.now() - started;
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 503, body: UNAVAILABLE });
      // The statement's server is asked after 500 ms and given 500 ms to answer; a new connection, 500 ms.
      expect(ms).toBeLessThan(3_000);
      proxy.thaw();
      let again = await create(t);
      for (let i = 0; again.statusCode === 503 && i < 20; i++) again = await create(t);
      expect(again.statusCode, again.body).toBe(201);
      const { rows } = await database.db.query<{ n: number }>("select count(*)::int as n from reports where reason = 'Bounds'");
      expect(rows[0]!.n).toBe(2);
    }, 30_000);
  });

  it('a server that never answers keeps neither the boot nor the other environment waiting', async () => {
    const proxy = await freezableProxy({ host: '127.0.0.1', port: 5432 });
    proxy.freeze();
    const started = performance.now();
    const t = await appOn(proxy.through('postgres://root@127.0.0.1:5432/test'), { DATABASE_CONNECT_TIMEOUT_MS: '500' });
    try {
      expect(performance.now() - started).toBeLessThan(5_000);
      const ready = await t.app.inject({ url: '/ready' });
      expect(ready.json()).toMatchObject({ environments: { production: 'unavailable', demo: 'ok' } });
      const res = await create(t);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 503, body: NOT_OPEN });
    } finally {
      await t.close();
      proxy.thaw();
      await proxy.close();
    }
  }, 30_000);

  it('a statement stuck behind a lock is cancelled at DATABASE_STATEMENT_TIMEOUT_MS: 503, nothing written', async () => {
    const database = await createTestDatabase();
    const t = await appOn(database.url!, { DATABASE_STATEMENT_TIMEOUT_MS: '300' });
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('lock table reports in exclusive mode');
      const started = performance.now();
      const res = await create(t);
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 503, body: UNAVAILABLE });
      expect(performance.now() - started).toBeLessThan(2_000);
      await other.query('rollback');
      const { rows } = await database.db.query<{ n: number }>('select count(*)::int as n from reports');
      expect(rows[0]!.n).toBe(0);
    } finally {
      await other.end();
      await t.close();
      await database.drop();
    }
  }, 30_000);

  it('a statement slow behind a lock on a server that is full is not taken for a hung server: the server refused the question, so it is there', async () => {
    const setUp = async (admin: pg.Client, role: string) => {
      await admin.query(`create role ${role} login`);
      await admin.query(`grant all on all tables in schema public to ${role}; grant all on all sequences in schema public to ${role}`);
    };
    await asRole('busy', setUp, async (url, admin, role) => {
      const t = await appOn(url, { DATABASE_CONNECT_TIMEOUT_MS: '300' });
      try {
        expect((await create(t)).statusCode).toBe(201);
        // A keyed create (TEST_IDEMPOTENCY_KEYS) sweeps the expired answers after its commit, on a
        // connection of the pool, perhaps a second one: settled before the connections are counted.
        const busy = async () => (await admin.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where usename = $1 and state is distinct from 'idle'", [role])).rows[0]!.n;
        for (let quiet = 0; quiet < 2; ) {
          quiet = (await busy()) === 0 ? quiet + 1 : 0;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        // The server full for this role from now on: the liveness question cannot connect (53300).
        const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where usename = $1', [role]);
        await admin.query(`alter role ${role} connection limit ${rows[0]!.n}`);
        await admin.query('begin');
        await admin.query('lock table reports in exclusive mode');
        const pending = create(t);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await admin.query('rollback');
        const res = await pending;
        expect(res.statusCode, res.body).toBe(201);
      } finally {
        await t.close();
      }
    });
  }, 30_000);

  it('a full server (53300) answers 503 and does not stop the boot; the environment opens once connections are free', async () => {
    const setUp = async (admin: pg.Client, role: string) => {
      await admin.query(`create role ${role} login connection limit 0`);
      await admin.query(`grant all on database ${admin.database} to ${role}`);
    };
    await asRole('full', setUp, async (url, admin, role) => {
      const t = await appOn(url);
      try {
        const res = await create(t);
        expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 503, body: NOT_OPEN });
        // Migrated by the server's superuser already: the role needs the tables' rights too.
        await admin.query(`grant all on all tables in schema public to ${role}; grant all on all sequences in schema public to ${role}`);
        await admin.query(`alter role ${role} connection limit -1`);
        let again = await create(t);
        for (let i = 0; again.statusCode === 503 && i < 50; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          again = await create(t);
        }
        expect(again.statusCode, again.body).toBe(201);
      } finally {
        await t.close();
      }
    });
  }, 30_000);
});
