// Test databases on the store under test: PGlite restored from a migrated snapshot (made once per
// run in global-setup), or, with TEST_DATABASE_URL, a fresh PostgreSQL database cloned from a
// migrated template, dropped afterwards. Each test file gets its own, so files run in parallel.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { inject } from 'vitest';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
export const onPostgres = TEST_DATABASE_URL !== undefined && TEST_DATABASE_URL !== '';
export const storeName = onPostgres ? 'postgres' : 'pglite';

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteSnapshot: string;
    pgTemplate: string;
  }
}

export function databaseUrl(database: string): string {
  const url = new URL(TEST_DATABASE_URL!);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

let snapshot: Promise<Blob> | undefined;

export interface TestDatabase {
  db: Db;
  /** Connection URL (PostgreSQL only). */
  url?: string;
  drop(): Promise<void>;
}

/** A migrated database of its own; `empty: true` for one without migrations (PostgreSQL only). */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  if (!onPostgres) {
    snapshot ??= readFile(inject('pgliteSnapshot')).then((bytes) => new Blob([bytes]));
    const db = await openPglite(options.empty ? {} : { loadDataDir: await snapshot });
    return { db, drop: () => db.close() };
  }
  const name = `cms_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create database ${name}${options.empty ? '' : ` template ${inject('pgTemplate')}`}`);
  const url = databaseUrl(name);
  const db = openPostgres({ connectionString: url, max: 5 });
  return {
    db,
    url,
    async drop() {
      await db.close();
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}
