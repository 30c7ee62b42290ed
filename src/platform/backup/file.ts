// The backup file of an embedded environment: one line naming the format, one line of JSON saying
// what is inside (environment, schema version, PostgreSQL version, checksum), then PGlite's own
// gzipped tar of the data folder (why this format: docs/decisions.md). Written atomically: a
// temporary file in the same folder, fsynced, renamed over, the folder fsynced.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import type { EnvironmentName } from '../../config.js';

export const BACKUP_MAGIC = 'CMS-BACKUP 1';
export const BACKUP_PAYLOAD = 'pglite-datadir-tar-gzip';
export const BACKUP_EXTENSION = '.cmsbackup';

export interface BackupHeader {
  payload: typeof BACKUP_PAYLOAD;
  environment: EnvironmentName;
  /** The latest migration applied in the copy: a service that ships fewer refuses to restore it. */
  schema_version: number | null;
  /** The data folder opens only on this PostgreSQL major version (server_version_num / 10000). */
  postgres_version_num: number;
  pglite_version: string;
  created_at: string;
  payload_bytes: number;
  payload_sha256: string;
}

export class BackupFileError extends Error {
  constructor(path: string, why: string) {
    super(`${path} is not a usable backup: ${why}`);
    this.name = 'BackupFileError';
  }
}

/** The installed PGlite's version, as recorded in every backup (for the operator, on a refusal). */
export const PGLITE_VERSION = (() => {
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
})();

export function backupHeader(environment: EnvironmentName, snapshot: { schemaVersion: number | null; postgresVersionNum: number }, payload: Uint8Array, at = new Date()): BackupHeader {
  return {
    payload: BACKUP_PAYLOAD,
    environment,
    schema_version: snapshot.schemaVersion,
    postgres_version_num: snapshot.postgresVersionNum,
    pglite_version: PGLITE_VERSION,
    created_at: at.toISOString(),
    payload_bytes: payload.byteLength,
    payload_sha256: createHash('sha256').update(payload).digest('hex'),
  };
}

/** Writes `parts` to `path` so that `path` is either absent or whole, even across a power cut. */
export async function writeAtomically(path: string, parts: Uint8Array[]): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  const file = await open(temporary, 'wx');
  try {
    try {
      for (const part of parts) await file.write(part);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (err) {
    await unlink(temporary).catch(() => undefined);
    throw err;
  }
  // The rename is durable once the folder's entry is.
  const folder = await open(dirname(path), 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

export async function writeBackupFile(path: string, header: BackupHeader, payload: Uint8Array): Promise<void> {
  await writeAtomically(path, [Buffer.from(`${BACKUP_MAGIC}\n${JSON.stringify(header)}\n`), payload]);
}

export async function readBackupFile(path: string): Promise<{ header: BackupHeader; payload: Blob }> {
  const bytes = await readFile(path);
  const first = bytes.indexOf(0x0a);
  const second = first < 0 ? -1 : bytes.indexOf(0x0a, first + 1);
  if (first < 0 || bytes.subarray(0, first).toString() !== BACKUP_MAGIC || second < 0) {
    throw new BackupFileError(path, `it does not start with "${BACKUP_MAGIC}" (a PostgreSQL environment's pg_dump file is restored with pg_restore)`);
  }
  let header: BackupHeader;
  try {
    header = JSON.parse(bytes.subarray(first + 1, second).toString()) as BackupHeader;
  } catch {
    throw new BackupFileError(path, 'its header is not JSON');
  }
  if (header.payload !== BACKUP_PAYLOAD) throw new BackupFileError(path, `unknown payload "${String(header.payload)}"`);
  const payload = bytes.subarray(second + 1);
  if (payload.byteLength !== header.payload_bytes || createHash('sha256').update(payload).digest('hex') !== header.payload_sha256) {
    throw new BackupFileError(path, 'its content does not match its checksum (truncated or damaged)');
  }
  return { header, payload: new Blob([payload]) };
}

/** `<env>-<UTC time to the millisecond>.cmsbackup`: names sort in time order. */
export function backupFileName(environment: EnvironmentName, at: Date): string {
  return `${environment}-${at.toISOString().replace(/[-:.]/g, '')}${BACKUP_EXTENSION}`;
}

const SCHEDULED = (environment: string) => new RegExp(`^${environment}-\\d{8}T\\d{9}Z\\${BACKUP_EXTENSION}$`);

/** Deletes the environment's scheduled backups beyond the newest `keep`; returns what it deleted. */
export async function pruneBackups(dir: string, environment: EnvironmentName, keep: number): Promise<string[]> {
  const pattern = SCHEDULED(environment);
  const mine = (await readdir(dir)).filter((name) => pattern.test(name)).sort();
  const doomed = mine.slice(0, Math.max(0, mine.length - keep));
  for (const name of doomed) await unlink(join(dir, name));
  return doomed;
}
