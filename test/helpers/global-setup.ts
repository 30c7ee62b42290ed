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
import { adminQuery, databaseUrl, onPostgres } from './stores.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (onPostgres) {
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
