// Once per `npm test`: migrate one database and keep it as the starting point of every test
// database (a PGlite snapshot file, or a PostgreSQL template database). PGlite's are made on
// PostgreSQL runs too: the tests of the embedded folder's own behaviour (its lock, backups of a
// folder) run on both stores.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { adminQuery, databaseUrl, onPostgres, pooledUrl, TEST_DATABASE_URL, TEST_POOLER_URL } from './stores.js';

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

/** A migrated template database on TEST_DATABASE_URL's server; each test database is a copy. */
async function preparePostgres(project: TestProject): Promise<() => Promise<void>> {
  await checkPooler();
  const template = `cms_template_${randomBytes(4).toString('hex')}`;
  await adminQuery(`create database ${template}`);
  const db = openPostgres({ connectionString: databaseUrl(template), max: 1 });
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    await adminQuery(`drop database if exists ${template} with (force)`);
    throw err;
  }
  await db.close();
  project.provide('pgTemplate', template);
  return () => adminQuery(`drop database if exists ${template} with (force)`);
}

/**
 * PGlite's starting points, each before (empty) and after every migration: a tarball that test
 * databases are restored from, and the same as a data folder that service and CLI processes start
 * on (prepareDataDir in stores.ts): a process on a copy starts warm instead of running initdb and
 * every migration, seconds per environment.
 */
async function preparePglite(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'cms-test-'));
  // A tarball's size is paid at each restore (PGlite untars it file by file): a 1 MB WAL segment
  // instead of 16 MB, and without template0 and template1, which nothing on PGlite creates a
  // database from, restore in half the time (0.25 s instead of 0.5 s here). The service's own
  // clusters keep initdb's defaults.
  const db = await openPglite({ initDbStartParams: ['--wal-segsize=1'] });
  try {
    await db.exec(`update pg_database set datistemplate = false where datname in ('template0', 'template1')`);
    // One statement per call: DROP DATABASE cannot run in the implicit transaction of a batch.
    await db.exec('drop database template0');
    await db.exec('drop database template1');
    await writeFile(join(dir, 'empty.tar'), Buffer.from(await (await db.dump()).arrayBuffer()));
    await migrate(db);
    await writeFile(join(dir, 'migrated.tar'), Buffer.from(await (await db.dump()).arrayBuffer()));
  } finally {
    await db.close();
  }
  for (const name of ['empty', 'migrated']) {
    const tarball = new Blob([await readFile(join(dir, `${name}.tar`))]);
    await (await openPglite({ dataDir: join(dir, name), loadDataDir: tarball })).close();
  }
  project.provide('pglite', {
    migrated: { tarball: join(dir, 'migrated.tar'), folder: join(dir, 'migrated') },
    empty: { tarball: join(dir, 'empty.tar'), folder: join(dir, 'empty') },
  });
  return () => rm(dir, { recursive: true, force: true });
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
