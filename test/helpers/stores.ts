// Test databases on the store under test: PGlite on a copy of a migrated data folder (made once per
// run in global-setup), or, with TEST_DATABASE_URL, a fresh PostgreSQL database cloned from a
// migrated template, dropped afterwards. Each test file gets its own, so files run in parallel.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statfsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { inject } from 'vitest';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { parseConfig } from '../../src/config.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
export const onPostgres = TEST_DATABASE_URL !== undefined && TEST_DATABASE_URL !== '';
export const storeName = onPostgres ? 'postgres' : 'pglite';
/**
 * A connection pooler in front of TEST_DATABASE_URL's server (PgBouncer in transaction mode, from
 * scripts/pgbouncer.sh): with it set, every test database's pool goes through it, and what needs
 * PostgreSQL itself (LISTEN, migrations, backups, verify-audit) goes to TEST_DATABASE_URL, as
 * <ENV>_DATABASE_URL and <ENV>_DATABASE_DIRECT_URL split them in production.
 */
export const TEST_POOLER_URL = process.env.TEST_POOLER_URL || undefined;
/** DATABASE_PREPARED_STATEMENTS for the whole run (false through a PgBouncer before 1.21). */
export const PREPARED_STATEMENTS = parseConfig({ DATABASE_PREPARED_STATEMENTS: process.env.DATABASE_PREPARED_STATEMENTS }).databasePreparedStatements;

declare module 'vitest' {
  export interface ProvidedContext {
    /** PGlite's starting points, each a data folder (global-setup.ts). */
    pglite: Record<'migrated' | 'empty' | 'demo', string>;
    pgTemplate: string;
  }
}

export function databaseUrl(database: string, server = TEST_DATABASE_URL!): string {
  const url = new URL(server);
  url.pathname = `/${database}`;
  return url.toString();
}

/** The URL a test database's pool uses: through the pooler when there is one. */
export function pooledUrl(database: string): string {
  return databaseUrl(database, TEST_POOLER_URL ?? TEST_DATABASE_URL);
}

/**
 * The variables naming an environment's database (`prefix` PRODUCTION or DEMO), as an operator
 * sets them: through the pooler with the direct URL beside it when the run has one.
 */
export function databaseEnv(prefix: string, db: TestDatabase): Record<string, string> {
  const env: Record<string, string> = { [`${prefix}_DATABASE_URL`]: db.pooledUrl ?? db.url! };
  if (db.pooledUrl !== db.url) env[`${prefix}_DATABASE_DIRECT_URL`] = db.url!;
  if (!PREPARED_STATEMENTS) env.DATABASE_PREPARED_STATEMENTS = 'false';
  return env;
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

/**
 * Where PGlite test folders go: TEST_SCRATCH_DIR, else memory (/dev/shm) where the machine has
 * room there (every PGlite write of a test would otherwise reach the disk; a run takes up to about
 * 2 GB at once), else the temporary folder. Docker's default /dev/shm (64 MB) is too small.
 */
export const SCRATCH = process.env.TEST_SCRATCH_DIR || (freeBytes('/dev/shm') >= 4 * 2 ** 30 ? '/dev/shm' : tmpdir());

function freeBytes(path: string): number {
  try {
    const { bavail, bsize } = statfsSync(path);
    return bavail * bsize;
  } catch {
    return 0;
  }
}

/** `to` becomes a copy of the folder `from`; cp(1) copies a data folder five times faster than fs.cp. */
export async function copyFolder(from: string, to: string): Promise<void> {
  await promisify(execFile)('cp', ['-R', from, to]);
}

export interface TestDatabase {
  db: Db;
  /** Connection URL of PostgreSQL itself (PostgreSQL only). */
  url?: string;
  /** The URL `db`'s pool uses: the pooler's with TEST_POOLER_URL, else `url` (PostgreSQL only). */
  pooledUrl?: string;
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** A database without migrations. */
  empty?: boolean;
  /** Migrated, with the demo organisation seeded (as the demo environment is after its first start). */
  demo?: boolean;
  /** Named prepared statements on the pool; the run's DATABASE_PREPARED_STATEMENTS by default. */
  preparedStatements?: boolean;
  /** Connections in the pool (5). */
  max?: number;
}

/** A migrated database of its own; `empty: true` for one without migrations. */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  if (!onPostgres) {
    // Beside the run's starting points, so the run's end removes what a test left behind.
    const dir = await mkdtemp(join(dirname(inject('pglite').migrated), 'db-'));
    await copyFolder(inject('pglite')[options.empty ? 'empty' : options.demo ? 'demo' : 'migrated'], join(dir, 'data'));
    const db = await openPglite({ dataDir: join(dir, 'data') });
    return {
      db,
      async drop() {
        await db.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `cms_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create database ${name}${options.empty ? '' : ` template ${inject('pgTemplate')}${options.demo ? '_demo' : ''}`}`);
  const url = databaseUrl(name);
  const pooled = pooledUrl(name);
  const db = openPostgres({
    connectionString: pooled,
    directConnectionString: url,
    preparedStatements: options.preparedStatements ?? PREPARED_STATEMENTS,
    max: options.max ?? 5,
  });
  return {
    db,
    url,
    pooledUrl: pooled,
    async drop() {
      await db.close();
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}

/**
 * Fills a DATA_DIR for a service or CLI process: each of `folders` (the two environments' by
 * default) is a copy of the run's migrated PGlite folder (global-setup.ts; `empty: true`: one
 * initialised, not migrated), so an embedded process starts as on its second start instead of
 * running initdb and every migration, seconds per environment. On PostgreSQL the service ignores
 * them. Returns `dir`.
 */
export async function prepareDataDir(dir: string, folders: readonly string[] = ['production', 'demo'], { empty = false } = {}): Promise<string> {
  const from = inject('pglite')[empty ? 'empty' : 'migrated'];
  await mkdir(dir, { recursive: true });
  await Promise.all(folders.map((folder) => copyFolder(from, join(dir, folder))));
  return dir;
}
