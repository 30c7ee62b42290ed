// Once per `npm test`: migrate one database and keep it as the starting point of every test
// database (a PGlite snapshot file, or a PostgreSQL template database).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { adminQuery, databaseUrl, onPostgres, pooledUrl, TEST_DATABASE_URL, TEST_POOLER_URL } from './stores.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (onPostgres) {
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
    project.provide('pgliteSnapshot', '');
    return () => adminQuery(`drop database if exists ${template} with (force)`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'cms-test-'));
  const db = await openPglite();
  try {
    await migrate(db);
    await writeFile(join(dir, 'snapshot.tar'), Buffer.from(await (await db.dump()).arrayBuffer()));
  } finally {
    await db.close();
  }
  project.provide('pgliteSnapshot', join(dir, 'snapshot.tar'));
  project.provide('pgTemplate', '');
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
