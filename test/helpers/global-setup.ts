// Once per `npm test`: migrate one database and keep it as the starting point of every test
// database (a PGlite data folder, or a PostgreSQL template database). PGlite's are made on
// PostgreSQL runs too: the tests of the embedded folder's own behaviour (its lock, backups of a
// folder) run on both stores.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { seedDemoIfEmpty } from '../../src/demo/seed.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { adminQuery, copyFolder, databaseUrl, onPostgres, pooledUrl, SCRATCH, TEST_DATABASE_URL, TEST_POOLER_URL } from './stores.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [dropTemplate, removePglite] = await Promise.all([onPostgres ? preparePostgres(project) : none(project), preparePglite(project)]);
  return async () => {
    await dropTemplate();
    await removePglite();
  };
}

async function none(project: TestProject): Promise<() => Promise<void>> {
  project.provide('pgTemplate', '');
  return async () => undefined;
}

/**
 * Template databases on TEST_DATABASE_URL's server, each test database a copy: one migrated, and
 * one migrated with the demo organisation seeded (what a test app's demo environment starts from,
 * as the service's does after its first start).
 */
async function preparePostgres(project: TestProject): Promise<() => Promise<void>> {
  await checkPooler();
  const template = `cms_template_${randomBytes(4).toString('hex')}`;
  const drop = async () => {
    await adminQuery(`drop database if exists ${template}_demo with (force)`);
    await adminQuery(`drop database if exists ${template} with (force)`);
  };
  try {
    await adminQuery(`create database ${template}`);
    await withDb(template, migrate);
    await adminQuery(`create database ${template}_demo template ${template}`);
    await withDb(`${template}_demo`, seedDemoIfEmpty);
  } catch (err) {
    await drop();
    throw err;
  }
  project.provide('pgTemplate', template);
  return drop;
}

async function withDb(database: string, fn: (db: Db) => Promise<unknown>): Promise<void> {
  const db = openPostgres({ connectionString: databaseUrl(database), max: 1 });
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * PGlite's starting points as data folders: before any migration (empty), after every migration,
 * and with the demo organisation seeded as well. Each test database, service and CLI process starts
 * on a copy (stores.ts), as the service does on its second start: a copied folder opens in a third
 * of the CPU time of a tarball restored into memory (PGlite writes it file by file), and nothing
 * runs initdb or a migration again.
 */
async function preparePglite(project: TestProject): Promise<() => Promise<void>> {
  await removeLeftovers(SCRATCH, /^cms-test-(\d+)-/);
  const dir = await mkdtemp(join(SCRATCH, `cms-test-${process.pid}-`));
  const folder = (name: string) => join(dir, name);
  await initialisedFolder(folder('empty'));
  await copyFolder(folder('empty'), folder('migrated'));
  await withPglite(folder('migrated'), migrate);
  await copyFolder(folder('migrated'), folder('demo'));
  await withPglite(folder('demo'), seedDemoIfEmpty);
  project.provide('pglite', { migrated: folder('migrated'), empty: folder('empty'), demo: folder('demo') });
  return () => rm(dir, { recursive: true, force: true });
}

/** What initdb runs with, and what is done to its folder before it is kept (initialisedFolder). */
const INITDB_PARAMS = ['--wal-segsize=1'];
const RECIPE = `${INITDB_PARAMS.join(' ')}; template0 and template1 dropped`;

/**
 * `to` becomes a folder fresh from initdb, which costs 4 of the setup's 6.5 s and depends on nothing
 * but PGlite's release and the recipe: kept in node_modules/.cache between runs under a name made of
 * both. A 1 MB WAL segment instead of 16 MB, and no template0 and template1, which nothing on PGlite
 * creates a database from: less to copy for every test database. The service's own folders keep
 * initdb's defaults.
 */
async function initialisedFolder(to: string): Promise<void> {
  const root = join(import.meta.dirname, '../..');
  const { version } = JSON.parse(await readFile(join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string };
  const kept = join(root, 'node_modules/.cache/cms-test', `pglite-${version}-${createHash('sha256').update(RECIPE).digest('hex').slice(0, 12)}`);
  await removeLeftovers(dirname(kept), /\.(\d+)$/);
  // The marker is written last: a folder without it was cut short, and is made again.
  if (!existsSync(join(kept, 'complete'))) {
    await rm(kept, { recursive: true, force: true });
    const building = `${kept}.${process.pid}`;
    await withPglite(building, async (db) => {
      await db.exec(`update pg_database set datistemplate = false where datname in ('template0', 'template1')`);
      // One statement per call: DROP DATABASE cannot run in the implicit transaction of a batch.
      await db.exec('drop database template0');
      await db.exec('drop database template1');
    }, INITDB_PARAMS);
    await writeFile(join(building, 'complete'), RECIPE);
    // Another run may have kept one first: theirs is as good.
    await rename(building, kept).catch(() => rm(building, { recursive: true, force: true }));
  }
  await copyFolder(kept, to);
}

/** Removes the entries of `dir` whose name carries (as `pattern`'s group) a process that is gone: runs that were killed. */
async function removeLeftovers(dir: string, pattern: RegExp): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(pattern.exec(name)?.[1]);
    if (pid > 0 && !isAlive(pid)) await rm(join(dir, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function withPglite(dataDir: string, fn: (db: Db) => Promise<unknown>, initDbStartParams?: string[]): Promise<void> {
  const db = await openPglite({ dataDir, ...(initDbStartParams ? { initDbStartParams } : {}) });
  try {
    await fn(db);
    // Recycles the WAL written so far: smaller folders to copy.
    await db.exec('checkpoint');
  } finally {
    await db.close();
  }
}

/**
 * With TEST_POOLER_URL the run is the suite through the pooler: a pooler that does not answer (or a
 * server behind it other than TEST_DATABASE_URL's) fails the run rather than letting it pass direct.
 */
async function checkPooler(): Promise<void> {
  if (TEST_POOLER_URL === undefined) return;
  // The server's own database, not the template: a pooled connection to a template would linger
  // and block `create database … template`.
  const database = new URL(TEST_DATABASE_URL!).pathname.slice(1) || 'postgres';
  const pooled = openPostgres({ connectionString: pooledUrl(database), directConnectionString: databaseUrl(database), preparedStatements: false, max: 1 });
  try {
    const seen = await pooled.query<{ port: number }>(`select current_setting('port')::int as port`);
    const direct = await pooled.direct((db) => db.query<{ port: number }>(`select current_setting('port')::int as port`));
    if (seen.rows[0]!.port !== direct.rows[0]!.port) throw new Error(`the pooler leads to the server on port ${seen.rows[0]!.port}, not TEST_DATABASE_URL's (${direct.rows[0]!.port})`);
  } catch (err) {
    throw new Error(`TEST_POOLER_URL=${TEST_POOLER_URL} does not lead to TEST_DATABASE_URL's server: ${(err as Error).message} (start it with scripts/pgbouncer.sh)`, { cause: err });
  } finally {
    await pooled.close();
  }
}
