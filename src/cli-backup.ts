// The CLI's backup commands: backup, restore, move-to-postgres (docs/operations.md). Same exit
// codes as the others: 0 done, 1 refused or failed (nothing written), 2 usage error.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ENV_OPTION, parseEnvironment, parseOptions, UsageError } from './cli-options.js';
import { loadConfig, type Config, type EnvironmentName } from './config.js';
import { BackupFileError } from './platform/backup/file.js';
import { MoveError, moveToPostgres } from './platform/backup/move.js';
import { RestoreRefused, restorePglite } from './platform/backup/restore.js';
import { backupPglite } from './platform/backup/scheduler.js';
import { DataFolderLockedError } from './platform/db/lock-file.js';
import { loadMigrations, migrate } from './platform/db/migrate.js';
import { openPglite, type PgliteDb } from './platform/db/pglite.js';
import { openPostgres } from './platform/db/postgres.js';

const MB = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

function requiredString(values: Record<string, string | boolean | undefined>, name: string, what: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required: ${what}`);
  return value;
}

/** The environment's embedded folder, or why the command cannot work on it (printed, exit 1). */
function embeddedFolder(config: Config, env: EnvironmentName, command: string): string | string[] {
  if (config.dataDir === ':memory:') return [`${command}: DATA_DIR is :memory:, there is no embedded folder to work on`];
  const folder = join(config.dataDir, env);
  if (!existsSync(folder) || readdirSync(folder).length === 0) return [`${command}: there is no embedded database at ${folder} (DATA_DIR=${config.dataDir})`];
  return folder;
}

function fail(lines: string[]): number {
  for (const line of lines) console.error(line);
  return 1;
}

const LOCKED_HINT = 'While the service runs, it writes the backups itself: set BACKUP_DIR (docs/operations.md).';

/** The environment's embedded database, opened (its folder locked), or the lines saying why not. */
async function openEmbedded(config: Config, env: EnvironmentName, command: string, ...lockedHint: string[]): Promise<{ db: PgliteDb; folder: string } | string[]> {
  const folder = embeddedFolder(config, env, command);
  if (Array.isArray(folder)) return folder;
  try {
    return { db: await openPglite({ dataDir: folder }), folder };
  } catch (err) {
    if (err instanceof DataFolderLockedError) return [`${command}: ${err.message}`, ...lockedHint];
    throw err;
  }
}

async function backupCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, out: { type: 'string' } });
  const env = parseEnvironment(values.env);
  const out = requiredString(values, 'out', 'the file to write');
  if (existsSync(out)) return fail([`backup: ${out} already exists; choose a new file name (nothing was written)`]);
  const config = loadConfig();
  // pg_dump's session (its snapshot, its settings) needs PostgreSQL itself, never a pooler.
  const { databaseUrl, databaseDirectUrl } = config.environments[env];
  if (databaseUrl) return pgDump(env, databaseDirectUrl ?? databaseUrl, out);

  const opened = await openEmbedded(config, env, 'backup', LOCKED_HINT);
  if (Array.isArray(opened)) return fail(opened);
  const { db } = opened;
  try {
    const header = await backupPglite(env, db, out);
    console.log(`${env}: backup written to ${out} (${MB(header.payload_bytes)}, schema version ${header.schema_version ?? 'none'})`);
    return 0;
  } finally {
    await db.close();
  }
}

/** PostgreSQL: pg_dump's custom format (restored with pg_restore), renamed into place when whole. */
async function pgDump(env: EnvironmentName, url: string, out: string): Promise<number> {
  const temporary = join(dirname(out), `.${basename(out)}.${process.pid}.tmp`);
  try {
    await promisify(execFile)('pg_dump', ['--format=custom', '--no-owner', `--file=${temporary}`, `--dbname=${url}`]);
    const file = await open(temporary, 'r');
    await file.sync().finally(() => file.close());
    await rename(temporary, out);
  } catch (err) {
    await unlink(temporary).catch(() => undefined);
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT' && e.path === 'pg_dump') {
      return fail([
        `backup: ${env} is on PostgreSQL and pg_dump is not installed: install PostgreSQL's client tools (the server's major version or newer),`,
        "or back it up with your provider's snapshots or pg_basebackup (docs/operations.md). Nothing was written.",
      ]);
    }
    return fail([`backup: pg_dump failed: ${(e.stderr ?? e.message).trim()}`, 'Nothing was written.']);
  }
  console.log(`${env}: backup written to ${out} by pg_dump (custom format: restore it with pg_restore --dbname=<url> ${out})`);
  return 0;
}

async function restoreCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, from: { type: 'string' }, force: { type: 'boolean' } });
  const env = parseEnvironment(values.env);
  const from = requiredString(values, 'from', 'the backup file to restore');
  const config = loadConfig();
  if (config.environments[env].databaseUrl) {
    return fail([`restore: ${env} is on PostgreSQL: restore a pg_dump file with pg_restore (docs/operations.md); nothing was changed`]);
  }
  if (config.dataDir === ':memory:') return fail(['restore: DATA_DIR is :memory:, there is no embedded folder to restore into']);
  if (!existsSync(from)) return fail([`restore: ${from} does not exist; nothing was changed`]);
  try {
    const result = await restorePglite(join(config.dataDir, env), from, { force: values.force === true, migrations: loadMigrations() });
    const { header } = result;
    console.log(`${env}: restored ${from} (taken ${header.created_at} from ${header.environment}, schema version ${header.schema_version ?? 'none'})`);
    if (result.applied.length > 0) console.log(`${env}: applied migrations ${result.applied.join(', ')}`);
    if (result.keptAside) console.log(`${env}: the folder it replaced is kept at ${result.keptAside}; delete it when you no longer need it`);
    return 0;
  } catch (err) {
    if (err instanceof DataFolderLockedError || err instanceof RestoreRefused || err instanceof BackupFileError) return fail([`restore: ${err.message}`]);
    throw err;
  }
}

async function moveCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, to: { type: 'string' } });
  const env = parseEnvironment(values.env);
  const to = requiredString(values, 'to', 'the PostgreSQL connection URL (postgres://user:password@host:port/database)');
  if (!/^postgres(ql)?:\/\//.test(to)) throw new UsageError(`--to must be a postgres:// connection URL (got "${to}")`);
  const config = loadConfig();
  if (config.environments[env].databaseUrl) return fail([`move-to-postgres: ${env} is already on PostgreSQL (${env.toUpperCase()}_DATABASE_URL is set)`]);
  const opened = await openEmbedded(config, env, 'move-to-postgres');
  if (Array.isArray(opened)) return fail(opened);
  const { db: source, folder } = opened;
  const target = openPostgres({ connectionString: to, max: 1, applicationName: `case-management-service:move-to-postgres:${env}` });
  try {
    const migrations = loadMigrations();
    const applied = await migrate(source, migrations);
    if (applied.length > 0) console.log(`${env}: migrated the embedded database first (${applied.join(', ')})`);
    const result = await moveToPostgres(source, target, migrations);
    const rows = result.tables.reduce((sum, t) => sum + t.rows, 0);
    for (const t of result.tables) console.log(`${env}: ${t.name}: ${t.rows} rows, checksum matches`);
    console.log(`${env}: copied ${rows} rows in ${result.tables.length} tables and ${result.sequences} sequences; every count and checksum matches`);
    console.log(`Set this variable for the service (and restart it); the embedded folder ${folder} is left as it was:`);
    console.log(`${env.toUpperCase()}_DATABASE_URL=${to}`);
    return 0;
  } catch (err) {
    if (err instanceof MoveError) return fail([`move-to-postgres: ${err.message}`]);
    return fail([`move-to-postgres: ${(err as Error).message}; nothing was written to the target`]);
  } finally {
    await Promise.all([source.close(), target.close()]);
  }
}

export const BACKUP_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  backup: backupCommand,
  restore: restoreCommand,
  'move-to-postgres': moveCommand,
};
