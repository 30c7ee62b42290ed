// Forward-only migrations recorded with name and time; concurrent boots on PostgreSQL; the
// embedded data folder lock.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { listAppliedMigrations, loadMigrations, migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { Environments } from '../../src/platform/environments.js';
import { PRODUCTION_KEY, silentLog, testConfig } from '../helpers/app.js';
import { createTestDatabase, databaseEnv, onPostgres, prepareDataDir, storeName } from '../helpers/stores.js';
import { NODE_FLAGS } from '../helpers/service-process.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../dist/src/cli.js');
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe(`migrations on ${storeName}`, () => {
  it('applies every file once, recording its name and time, and is a no-op afterwards', async () => {
    const t = await createTestDatabase({ empty: true });
    cleanups.push(() => t.drop());
    const files = loadMigrations();
    expect(files.length).toBeGreaterThan(0);
    const before = Date.now();
    expect(await migrate(t.db)).toEqual(files.map((m) => m.version));
    expect(await migrate(t.db)).toEqual([]);
    const applied = await listAppliedMigrations(t.db);
    expect(applied.map(({ version, name }) => ({ version, name }))).toEqual(files.map(({ version, name }) => ({ version, name })));
    for (const row of applied) expect(Date.parse(row.applied_at)).toBeGreaterThanOrEqual(before - 60_000);
  });

  it('a start with every migration recorded and unchanged reads that in two statements, no transaction', async () => {
    const t = await createTestDatabase();
    cleanups.push(() => t.drop());
    const calls: string[] = [];
    const counted = new Proxy(t.db, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(prop));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    expect(await migrate(counted)).toEqual([]);
    expect(calls).toEqual(['query', 'query']);
    // One migration more, or one fewer recorded: the locked path, one transaction per migration.
    calls.length = 0;
    const files = loadMigrations();
    const next = { version: files.length + 1, name: 'next', sql: 'create table next_one (id int)', checksum: 'n' };
    expect(await migrate(counted, [...files, next])).toEqual([next.version]);
    expect(calls.filter((c) => c === 'transaction')).toHaveLength(files.length + 1);
    expect((await t.db.query(`select to_regclass('next_one') is not null as made`)).rows).toEqual([{ made: true }]);
  });

  it('refuses a migration that changed after it was applied', async () => {
    const t = await createTestDatabase();
    cleanups.push(() => t.drop());
    const [first, ...rest] = loadMigrations();
    const edited = { ...first!, sql: `${first!.sql}\n-- edited`, checksum: 'different' };
    await expect(migrate(t.db, [edited, ...rest])).rejects.toThrow(`Migration 1_${first!.name} was changed after it was applied`);
  });

  it('a failing migration leaves nothing of itself behind', async () => {
    const t = await createTestDatabase();
    cleanups.push(() => t.drop());
    const files = loadMigrations();
    const broken = { version: files.length + 1, name: 'broken', sql: 'create table half_done (id int); select 1/0;', checksum: 'x' };
    await expect(migrate(t.db, [...files, broken])).rejects.toThrow('division by zero');
    expect((await t.db.query(`select to_regclass('half_done') as t`)).rows).toEqual([{ t: null }]);
    expect((await listAppliedMigrations(t.db)).map((m) => m.version)).toEqual(files.map((m) => m.version));
  });
});

describe.runIf(onPostgres)('two instances booting on one fresh PostgreSQL database (PostgreSQL only)', () => {
  it('both boot, and every migration is applied exactly once', async () => {
    const production = await createTestDatabase({ empty: true });
    const demo = await createTestDatabase({ empty: true });
    cleanups.push(() => production.drop(), () => demo.drop());
    const config = testConfig({ ...databaseEnv('PRODUCTION', production), ...databaseEnv('DEMO', demo) });
    const boot = async () => {
      const environments = await Environments.open(config, { log: silentLog });
      return buildApp({ config, environments, logger: silentLog });
    };
    const apps = await Promise.all([boot(), boot(), boot()]);
    cleanups.push(() => Promise.all(apps.map((app) => app.close())));
    for (const app of apps) {
      const res = await app.inject({ url: '/generate/case', headers: { authorization: PRODUCTION_KEY } });
      expect(res.statusCode).toBe(200);
    }
    const check = openPostgres({ connectionString: production.url! });
    cleanups.push(() => check.close());
    const { rows } = await check.query(`select version, count(*) as n from schema_migrations group by version order by version`);
    expect(rows).toEqual(loadMigrations().map((m) => ({ version: m.version, n: 1 })));
  });
});

describe('the embedded data folder is held by one process', () => {
  it('a second process opening it is refused with a clear error, and nothing is written', async () => {
    const dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-lock-')), ['production'], { empty: true });
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const held = await openPglite({ dataDir: join(dataDir, 'production') });
    try {
      const failure = await run(process.execPath, [...NODE_FLAGS, CLI, 'migrate', '--env', 'production'], {
        env: { PATH: process.env.PATH, DATA_DIR: dataDir },
      }).catch((err: { code: number; stderr: string }) => err);
      expect(failure).toMatchObject({ code: 1 });
      expect((failure as { stderr: string }).stderr).toContain(
        `The embedded data folder ${join(dataDir, 'production')} is in use by process ${process.pid}`,
      );
      // Our handle still works and saw no migration from the refused process.
      expect((await held.query(`select to_regclass('schema_migrations') as t`)).rows).toEqual([{ t: null }]);
    } finally {
      await held.close();
    }
    // Once released, the same command succeeds.
    const ok = await run(process.execPath, [...NODE_FLAGS, CLI, 'migrate', '--env', 'production'], { env: { PATH: process.env.PATH, DATA_DIR: dataDir } });
    expect(ok.stdout).toMatch(/^production: applied 1/);
  });

  it('a first start from nothing: the folder is made, initdb runs, every migration is applied; the next start is up to date', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cms-first-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const env = { env: { PATH: process.env.PATH, DATA_DIR: join(dataDir, 'not-yet') } };
    const first = await run(process.execPath, [...NODE_FLAGS, CLI, 'migrate', '--env', 'production'], env);
    expect(first.stdout).toBe(`production: applied ${loadMigrations().map((m) => m.version).join(', ')}\n`);
    expect(existsSync(join(dataDir, 'not-yet', 'production', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(dataDir, 'not-yet', 'production.lock'))).toBe(false);
    const second = await run(process.execPath, [...NODE_FLAGS, CLI, 'migrate', '--env', 'production'], env);
    expect(second.stdout).toBe('production: up to date\n');
  });

  it('a lock left by a process that died is taken over', async () => {
    const dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-lock-')), ['production']);
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const { stdout } = await run(process.execPath, ['-e', 'console.log(process.pid)']);
    await writeFile(join(dataDir, 'production.lock'), stdout.trim()); // that pid has exited
    const db = await openPglite({ dataDir: join(dataDir, 'production') });
    expect((await db.query('select 1 as ok')).rows).toEqual([{ ok: 1 }]);
    await db.close();
  });
});
