// Forward-only numbered SQL migrations (migrations/0001_name.sql), each applied in its own
// transaction and recorded with its name, checksum and time. Every transaction first takes one
// advisory lock, so instances booting together on PostgreSQL apply each file exactly once. A
// migration whose first line is `--! no-transaction` runs statement by statement under the same
// lock held by its session (migrate-statements.ts: concurrent index builds, batched rewrites).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import { checkMarkers, inTransactionForm, NO_TRANSACTION, splitStatements, type MigrationStatement } from './migrate-statements.js';
import type { Db, Queryable, Tx } from './types.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
  /** Its statements when it runs outside a transaction (`--! no-transaction`); undefined: one transaction. */
  statements?: MigrationStatement[];
}

const MIGRATIONS_DIR = join(PROJECT_ROOT, 'migrations');
const FILE_NAME = /^(\d{4})_([a-z0-9_-]+)\.sql$/;
// Any fixed 64-bit number; it only has to be the same for every instance of this service.
const MIGRATION_LOCK_KEY = 4_207_110_913;
/**
 * The lock a `--! no-transaction` migration holds, a key of its own. Its concurrent index build
 * waits for every transaction older than it, and a transaction waiting for MIGRATION_LOCK_KEY (an
 * instance booting meanwhile, of this release or the one before) would wait for the build in
 * turn: a deadlock. Nothing waits on this key inside a transaction (it is polled, not waited for),
 * and migrations still go one at a time: each instance takes them in order, and one that reaches
 * this migration unrecorded polls until it is done.
 */
const NO_TRANSACTION_LOCK_KEY = 4_207_110_914;
const NO_TRANSACTION_LOCK_POLL_MS = 200;

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
      checkMarkers(file, sql);
      const statements = NO_TRANSACTION.test(sql) ? splitStatements(file, sql) : undefined;
      return { version, name: match[2]!, sql, checksum: createHash('sha256').update(sql).digest('hex'), statements };
    });
  return migrations;
}

export interface MigrateOptions {
  /** Where a wait for another session's migration is said (a boot that would otherwise be silent). */
  log?: { warn(details: object, message: string): void };
  /** How long a wait for the lock of a `--! no-transaction` migration goes unsaid, then between two sayings. */
  lockWaitLogMs?: { first: number; every: number };
}

/** Applies what is pending; returns the versions this call applied. */
export async function migrate(db: Db, migrations: Migration[] = loadMigrations(), options: MigrateOptions = {}): Promise<number[]> {
  if (await allRecorded(db, migrations)) return [];
  const applied: number[] = [];
  for (const migration of migrations) {
    const didApply = migration.statements
      ? await applyOutsideTransaction(db, migration, migration.statements, options)
      : await withLockRetries(() => db.transaction((tx) => applyMigration(tx, migration, { lockTimeoutMs: MIGRATION_LOCK_TIMEOUT_MS })));
    if (didApply) applied.push(migration.version);
  }
  return applied;
}

/** `fn` again after a pause while it gives up on a lock (55P03), MIGRATION_LOCK_ATTEMPTS times in all. */
async function withLockRetries<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= MIGRATION_LOCK_ATTEMPTS) throw err;
      // The writes queued behind it go first; then the migration asks again.
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * attempt)));
    }
  }
}

/**
 * A `--! no-transaction` migration, statement by statement, each committed on its own, under
 * NO_TRANSACTION_LOCK_KEY held by this session (`db` is one session: Db.direct). A failed statement
 * may cost the session (the driver replaces a connection after some failures), and the lock with
 * it: a retry takes the lock again and first asks whether another instance finished the migration
 * meanwhile. Cut short, it runs again from its first statement at the next start: its statements
 * are written to allow that.
 */
async function applyOutsideTransaction(db: Db, migration: Migration, statements: MigrationStatement[], options: MigrateOptions): Promise<boolean> {
  const lockSession = (session: Db) => lockSessionFor(session, migration, options);
  await lockSession(db);
  try {
    await db.exec(SCHEMA_MIGRATIONS);
    if (await isRecorded(db, migration)) return false;
    for (const statement of statements) {
      const done = await withLockRetries(async (attempt) => {
        if (attempt > 1) {
          await lockSession(db);
          if (await isRecorded(db, migration)) return true;
        }
        // A concurrent build waits for the transactions before it without stopping any write: no
        // lock_timeout, which would only leave an invalid index behind.
        await db.exec(`set lock_timeout = ${statement.concurrentIndex ? 0 : MIGRATION_LOCK_TIMEOUT_MS}`);
        if (statement.concurrentIndex) await dropInvalidIndex(db, statement.concurrentIndex);
        await runStatement(db, statement, statement.sql);
        if (statement.concurrentIndex) await assertValidIndex(db, statement.concurrentIndex, migration);
        return false;
      });
      if (done) return false;
    }
    await record(db, migration);
    return true;
  } finally {
    await db.exec('reset lock_timeout').catch(() => undefined);
    // Every level of it this session took (a retry takes it again).
    await db.query('select pg_advisory_unlock_all()').catch(() => undefined);
  }
}

/**
 * Polls for NO_TRANSACTION_LOCK_KEY on this session, never waiting on it (see the key). A long wait
 * is said, with who holds the lock: an instance whose boot waits behind a build, or behind an
 * operator's session that took the key, is otherwise silent until it is done.
 */
async function lockSessionFor(db: Db, migration: Migration, { log, lockWaitLogMs = LOCK_WAIT_LOG_MS }: MigrateOptions): Promise<void> {
  const started = Date.now();
  const name = `${String(migration.version).padStart(4, '0')}_${migration.name}`;
  let sayAt = started + lockWaitLogMs.first;
  for (;;) {
    const { rows } = await db.query<{ got: boolean }>('select pg_try_advisory_lock($1::bigint) as got', [NO_TRANSACTION_LOCK_KEY]);
    if (rows[0]?.got) return;
    if (log !== undefined && Date.now() >= sayAt) {
      sayAt = Date.now() + lockWaitLogMs.every;
      const holders = await lockHolders(db).catch((err: unknown) => `unknown (${err instanceof Error ? err.message : String(err)})`);
      const named =
        typeof holders === 'string'
          ? holders
          : holders.map((h) => (h.pid === null ? 'a prepared transaction' : `pid ${h.pid} (${h.application_name || 'no application name'}, ${h.state ?? 'state not visible to this role'})`)).join(', ') ||
            'a session that has let it go';
      log.warn({ migration: name, waited_s: Math.round((Date.now() - started) / 1000), holders }, `migration ${name} waits for the migrations' lock, held by ${named}`);
    }
    await new Promise((resolve) => setTimeout(resolve, NO_TRANSACTION_LOCK_POLL_MS));
  }
}

const LOCK_WAIT_LOG_MS = { first: 10_000, every: 60_000 };

/**
 * The sessions holding NO_TRANSACTION_LOCK_KEY: a bigint key is kept as its high 32 bits in
 * classid and its low in objid, both unsigned (oid), so the key is put back together from them. A
 * prepared transaction holds a lock without a session (its pid is null).
 */
async function lockHolders(db: Db): Promise<{ pid: number | null; application_name: string | null; state: string | null }[]> {
  const { rows } = await db.query<{ pid: number | null; application_name: string | null; state: string | null }>(
    `select l.pid, a.application_name, a.state from pg_locks l left join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.objsubid = 1 and l.database = (select oid from pg_database where datname = current_database())
        and ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint`,
    [NO_TRANSACTION_LOCK_KEY],
  );
  return rows;
}

/** One statement; a batch marked `--! repeat until no rows` until it changes none. */
async function runStatement(db: Queryable, statement: MigrationStatement, sql: string): Promise<void> {
  for (;;) {
    const { rowCount } = await db.query(sql);
    if (!statement.repeat || rowCount === 0) return;
  }
}

/** The index named so in the search path's schemas, and whether it is valid; undefined: none. */
async function indexValidity(db: Db, name: string): Promise<boolean | undefined> {
  const { rows } = await db.query<{ valid: boolean }>(
    `select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
      where c.relname = $1::text and c.relnamespace = any (current_schemas(false)::regnamespace[])`,
    [name],
  );
  return rows[0]?.valid;
}

/** A concurrent build cut short leaves its index behind, invalid: dropped, so the build runs again. */
async function dropInvalidIndex(db: Db, name: string): Promise<void> {
  if ((await indexValidity(db, name)) === false) await db.exec(`drop index concurrently if exists "${name.replace(/"/g, '""')}"`);
}

/** `if not exists` skips an index of that name whatever its state: the migration is done only with a valid one. */
async function assertValidIndex(db: Db, name: string, migration: Migration): Promise<void> {
  if ((await indexValidity(db, name)) !== true) {
    throw new Error(`Migration ${migration.version}_${migration.name}: the index ${name} is not valid after its concurrent build (drop it, or its name names another index)`);
  }
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
  await tx.exec(SCHEMA_MIGRATIONS);
  if (await isRecorded(tx, migration)) return false;
  if (migration.statements) {
    // In one transaction (move-to-postgres fills an empty database so): without CONCURRENTLY.
    for (const statement of migration.statements) await runStatement(tx, statement, inTransactionForm(statement));
  } else {
    await tx.exec(migration.sql);
  }
  await record(tx, migration);
  return true;
}

const SCHEMA_MIGRATIONS = `create table if not exists schema_migrations (
  version integer primary key,
  name text not null,
  checksum text not null,
  applied_at timestamptz not null default now()
)`;

/** Whether it is recorded already, unchanged (a changed one is refused). */
async function isRecorded(db: Queryable, migration: Migration): Promise<boolean> {
  const { rows } = await db.query<{ checksum: string }>('select checksum from schema_migrations where version = $1::int', [migration.version]);
  if (rows[0] && rows[0].checksum !== migration.checksum) {
    throw new Error(`Migration ${migration.version}_${migration.name} was changed after it was applied; add a new migration instead`);
  }
  return rows[0] !== undefined;
}

async function record(db: Queryable, migration: Migration): Promise<void> {
  await db.query('insert into schema_migrations (version, name, checksum) values ($1::int, $2::text, $3::text)', [migration.version, migration.name, migration.checksum]);
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
