// A connection pooler in front of PostgreSQL (issue 30): `<ENV>_DATABASE_URL` is the pooler's and
// `<ENV>_DATABASE_DIRECT_URL` the server's. The pool uses the first; the listening connection,
// migrations, backups and verify-audit the second; DATABASE_PREPARED_STATEMENTS=false prepares no
// named statement. Two TCP relays stand in for the two addresses, so that what went where is seen
// (the bytes each carried, and the ports PostgreSQL saw in pg_stat_activity). PostgreSQL only;
// the whole suite through a real PgBouncer is the `TEST_POOLER_URL` run of .ci/run.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadMigrations } from '../src/platform/db/migrate.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import { defaultOpenDb, Environments } from '../src/platform/environments.js';
import { createTestApp, PRODUCTION_KEY, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { freePort, NODE_FLAGS } from './helpers/service-process.js';
import { adminQuery, createTestDatabase, onPostgres, TEST_DATABASE_URL, type TestDatabase } from './helpers/stores.js';

const CLI = join(import.meta.dirname, '../dist/src/cli.js');

/** A TCP relay to the test server: what clients sent through it, and the ports it connected from. */
interface Relay {
  port: number;
  sent: () => string;
  /** Local ports of its connections to PostgreSQL: what the server sees as client_port. */
  serverSidePorts: Set<number>;
  close(): Promise<void>;
}

async function startRelay(): Promise<Relay> {
  const target = new URL(TEST_DATABASE_URL!);
  const chunks: Buffer[] = [];
  const serverSidePorts = new Set<number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.on('connect', () => serverSidePorts.add(upstream.localPort!));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    // Protocol framing aside, statement texts and startup parameters travel as plain UTF-8.
    sent: () => Buffer.concat(chunks).toString('latin1'),
    serverSidePorts,
    async close() {
      sockets.forEach((s) => s.destroy());
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const urlVia = (port: number, database: TestDatabase) => {
  const url = new URL(database.url!);
  url.port = String(port);
  return url.toString();
};

function cli(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { PATH: process.env.PATH ?? '', DATA_DIR: cwd, ...env }, cwd }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe.runIf(onPostgres)('a pool through a pooler, the rest direct (PostgreSQL only)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  });
  const database = async (empty: boolean) => {
    const d = await createTestDatabase({ empty });
    cleanups.push(() => d.drop());
    return d;
  };
  const relay = async () => {
    const r = await startRelay();
    cleanups.push(() => r.close());
    return r;
  };

  it('an instance migrates and listens over the direct URL and serves its requests through the pool', async () => {
    const [pooler, direct] = [await relay(), await relay()];
    const [production, demo] = [await database(true), await database(true)];
    const config = testConfig({
      PRODUCTION_DATABASE_URL: urlVia(pooler.port, production),
      PRODUCTION_DATABASE_DIRECT_URL: urlVia(direct.port, production),
      DEMO_DATABASE_URL: urlVia(pooler.port, demo),
      DEMO_DATABASE_DIRECT_URL: urlVia(direct.port, demo),
    });
    // No startup option goes through a pooler: the database's own setting is what the pool runs
    // with, and a jit left on is said at boot (production), one set off is not (demo).
    await adminQuery(`alter database ${new URL(production.url!).pathname.slice(1)} set jit = on`);
    await adminQuery(`alter database ${new URL(demo.url!).pathname.slice(1)} set jit = off`);
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const environments = await Environments.open(config, { log, sealing: false });
    const app = await buildApp({ config, environments, logger: silentLog });
    cleanups.push(() => app.close());
    await app.ready();

    // Both databases were empty: every migration ran, and over the direct URL only.
    const applied = await production.db.query<{ n: number }>('select count(*)::int as n from schema_migrations');
    expect(applied.rows).toEqual([{ n: loadMigrations().length }]);
    expect(direct.sent()).toContain('create table if not exists schema_migrations');
    expect(direct.sent()).toContain('listen cms_queue_changed');
    expect(direct.sent()).toContain('listen cms_auth_changed');
    const jit = warnings.map((line) => JSON.parse(line) as { environment: string; msg: string }).filter((w) => w.msg.startsWith('jit is on'));
    expect(jit.map((w) => w.environment)).toEqual(['production']);

    const res = await app.inject({
      method: 'POST', url: '/reports/create', headers: { authorization: PRODUCTION_KEY },
      payload: { report_id: 'POOLED-1', reporter: 'Reporter', reported: 'Reported', reason: 'Through the pooler', notes: 'n', evidence: 'e' },
    });
    expect(res.statusCode).toBe(201);
    const written = await production.db.query('select report_id, reason from reports');
    expect(written.rows).toEqual([{ report_id: 'POOLED-1', reason: 'Through the pooler' }]);
    expect(pooler.sent()).toContain('insert into reports');
    expect(pooler.sent()).not.toContain('schema_migrations (');
    expect(pooler.sent()).not.toMatch(/listen cms_/);
    // No startup options through a pooler (PgBouncer 1.18 refuses the parameter).
    expect(pooler.sent()).not.toContain('jit=off');

    // What PostgreSQL itself saw: the listening connection came from the direct relay, the pool's from the pooler's.
    const { rows } = await production.db.query<{ application_name: string; client_port: number }>(
      `select application_name, client_port from pg_stat_activity where datname = current_database() and application_name like 'case-management-service:production%'`,
    );
    const listening = rows.filter((r) => r.application_name === 'case-management-service:production:listen');
    const pooled = rows.filter((r) => r.application_name === 'case-management-service:production');
    expect(listening).toHaveLength(1);
    expect(direct.serverSidePorts.has(listening[0]!.client_port)).toBe(true);
    expect(pooled.length).toBeGreaterThan(0);
    for (const r of pooled) expect(pooler.serverSidePorts.has(r.client_port)).toBe(true);
  });

  it('migrate, verify-audit and backup use the direct URL only: the pooler\'s may be down', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cms-pooler-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const production = await database(true);
    const env = {
      // Nothing listens there: a command that used the pool would fail to connect.
      PRODUCTION_DATABASE_URL: urlVia(await freePort(), production),
      PRODUCTION_DATABASE_DIRECT_URL: production.url!,
    };

    const migrated = await cli(['migrate', '--env', 'production'], env, dir);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toBe(`production: applied ${loadMigrations().map((m) => m.version).join(', ')}\n`);

    const verified = await cli(['verify-audit', '--env', 'production'], env, dir);
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/^production: audit chain verifies: 0 rows, head [0-9a-f]{64} /);
    const recorded = await production.db.query<{ ok: boolean }>('select ok from audit_verifications');
    expect(recorded.rows).toEqual([{ ok: true }]);

    const file = join(dir, 'production.dump');
    const backup = await cli(['backup', '--env', 'production', '--out', file], env, dir);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    expect(backup.stdout).toContain(`production: backup written to ${file} by pg_dump`);
    expect((await readFile(file)).subarray(0, 5).toString()).toBe('PGDMP');
  }, 120_000);
});

describe.runIf(onPostgres)('DATABASE_PREPARED_STATEMENTS (PostgreSQL only)', () => {
  const apps: TestApp[] = [];
  let databases: TestDatabase[] = [];
  beforeAll(async () => {
    databases = [await createTestDatabase(), await createTestDatabase()];
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
    for (const d of databases) await d.drop();
  });

  /** An app on one pooled connection per environment, opened from the configuration as the service opens it. */
  async function appWith(prepared: 'true' | 'false'): Promise<{ app: TestApp; db: Db }> {
    const env = { PRODUCTION_DATABASE_URL: databases[0]!.url!, DEMO_DATABASE_URL: databases[1]!.url!, DATABASE_PREPARED_STATEMENTS: prepared, DATABASE_POOL_SIZE: '1' };
    const open = defaultOpenDb(testConfig(env), silentLog);
    const app = await createTestApp({ env, openDb: { production: open, demo: open } });
    apps.push(app);
    return { app, db: app.environments.get('production')!.db };
  }

  /** The hot statements that are named: an event written, a queue swept and claimed, a report's access checked. */
  async function exercise({ app }: TestApp, id: string): Promise<void> {
    const headers = { authorization: PRODUCTION_KEY };
    const created = await app.inject({ method: 'POST', url: '/reports/create', headers, payload: { report_id: id, reporter: 'Reporter', reported: 'Reported', reason: 'Prepared?', notes: 'n', evidence: 'e' } });
    expect(created.statusCode).toBe(201);
    // Nothing is queued (a report's creation queues no action): swept, probed, none to hand out.
    const claimed = await app.inject({ method: 'GET', url: '/actions/next/operator', headers });
    expect(claimed.statusCode).toBe(204);
    const read = await app.inject({ method: 'GET', url: `/reports/${id}`, headers });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({ success: true, report: { report_id: id, reason: 'Prepared?' } });
  }

  const prepared = async (db: Db) => (await db.query<{ name: string }>('select name from pg_prepared_statements order by name')).rows.map((r) => r.name);

  it('false: the same requests prepare no named statement on the connection that ran them', async () => {
    const { app, db } = await appWith('false');
    await exercise(app, 'UNPREPARED-1');
    expect(await prepared(db)).toEqual([]);
    const written = await db.query<{ n: number }>(`select count(*)::int as n from events where report_id = 'UNPREPARED-1'`);
    expect(written.rows[0]!.n).toBeGreaterThan(0);
  });

  it('true (the default): they are prepared once per connection, by name', async () => {
    const { app, db } = await appWith('true');
    await exercise(app, 'PREPARED-1');
    expect(await prepared(db)).toEqual(expect.arrayContaining(['record_event', 'sweep_probe_report_actions']));
  });

  it('the adapter sends a named query unnamed when they are off', async () => {
    const d = databases[0]!;
    for (const preparedStatements of [false, true]) {
      const db = openPostgres({ connectionString: d.url!, max: 1, preparedStatements });
      try {
        expect((await db.query('select $1::int + 1 as n', [41], { name: 'answer' })).rows).toEqual([{ n: 42 }]);
        expect(await prepared(db)).toEqual(preparedStatements ? ['answer'] : []);
      } finally {
        await db.close();
      }
    }
  });
});
