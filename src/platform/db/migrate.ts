// Forward-only numbered SQL migrations (migrations/0001_name.sql), each applied in its own
// transaction and recorded with its name, checksum and time. Every transaction first takes one
// advisory lock, so instances booting together on PostgreSQL apply each file exactly once.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import type { Db, Tx } from './types.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

const MIGRATIONS_DIR = join(PROJECT_ROOT, 'migrations');
const FILE_NAME = /^(\d{4})_([a-z0-9_-]+)\.sql$/;
// Any fixed 64-bit number; it only has to be the same for every instance of this service.
const MIGRATION_LOCK_KEY = 4_207_110_913;

/**
 * How long a migration's statement waits for a table lock (issue 40). A migration that waits
 * behind a long transaction holds every write to that table in the queue behind it: past this it
 * gives up (55P03), the writes go on, and it tries again after a pause, MIGRATION_LOCK_ATTEMPTS
 * times in all before the boot fails naming the lock.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 1_000;
const MIGRATION_LOCK_ATTEMPTS = 60;
const LOCK_NOT_AVAILABLE = '55P03';

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file, index) => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new Error(`Migration file ${file} must be named NNNN_name.sql`);
      const version = Number(match[1]);
      if (version !== index + 1) throw new Error(`Migration ${file} is out of sequence: expected number ${index + 1}`);
      const sql = readFileSync(join(dir, file), 'utf8');
      return { version, name: match[2]!, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
  return migrations;
}

/** Applies what is pending; returns the versions this call applied. */
export async function migrate(db: Db, migrations: Migration[] = loadMigrations()): Promise<number[]> {
  if (await allRecorded(db, migrations)) return [];
  const applied: number[] = [];
  for (const migration of migrations) {
    for (let attempt = 1; ; attempt++) {
      try {
        const didApply = await db.transaction((tx) => applyMigration(tx, migration, { lockTimeoutMs: MIGRATION_LOCK_TIMEOUT_MS }));
        if (didApply) applied.push(migration.version);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= MIGRATION_LOCK_ATTEMPTS) throw err;
        // The writes queued behind it go first; then the migration asks again.
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * attempt)));
      }
    }
  }
  return applied;
}

/**
 * Whether every migration is recorded, unchanged, and nothing newer: every start but a release's
 * first, read in two statements instead of a locked transaction per migration (a tenth of a second
 * per environment on PGlite). Anything else takes the path above, which decides under the lock.
 */
async function allRecorded(db: Db, migrations: Migration[]): Promise<boolean> {
  const { rows: table } = await db.query<{ present: boolean }>(`select to_regclass('schema_migrations') is not null as present`);
  if (!table[0]?.present) return false;
  const { rows } = await db.query<{ version: number; checksum: string }>('select version, checksum from schema_migrations order by version');
  return rows.length === migrations.length && rows.every((row, i) => row.version === migrations[i]!.version && row.checksum === migrations[i]!.checksum);
}

/**
 * Applies one migration inside `tx` unless it is recorded already (then checks it is unchanged);
 * true when it applied it. move-to-postgres runs them all in its one transaction.
 */
export async function applyMigration(tx: Tx, migration: Migration, options: { lockTimeoutMs?: number } = {}): Promise<boolean> {
  await tx.query('select pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
  // After the advisory lock: an instance waiting while another migrates is not giving up.
  if (options.lockTimeoutMs !== undefined) await tx.exec(`set local lock_timeout = ${Math.round(options.lockTimeoutMs)}`);
  await tx.exec(`create table if not exists schema_migrations (
    version integer primary key,
    name text not null,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`);
  const { rows } = await tx.query<{ checksum: string }>('select checksum from schema_migrations where version = $1::int', [migration.version]);
  if (rows[0]) {
    if (rows[0].checksum !== migration.checksum) {
      throw new Error(`Migration ${migration.version}_${migration.name} was changed after it was applied; add a new migration instead`);
    }
    return false;
  }
  await tx.exec(migration.sql);
  await tx.query('insert into schema_migrations (version, name, checksum) values ($1::int, $2::text, $3::text)', [
    migration.version,
    migration.name,
    migration.checksum,
  ]);
  return true;
}

export interface AppliedMigration {
  version: number;
  name: string;
  applied_at: string;
}

export async function listAppliedMigrations(db: Db): Promise<AppliedMigration[]> {
  const { rows } = await db.query<AppliedMigration>('select version, name, applied_at from schema_migrations order by version');
  return rows;
}
