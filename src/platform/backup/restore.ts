// restore: an embedded environment's folder replaced by a backup. The backup is unpacked and
// migrated beside the folder first; only when that worked is the folder swapped for it, the old
// one kept aside. The folder's lock is held throughout, so the service cannot start on it meanwhile.
import { existsSync, readdirSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { migrate, type Migration } from '../db/migrate.js';
import { lockDataFolder } from '../db/lock-file.js';
import { openPglite } from '../db/pglite.js';
import { tablesWithRows } from './catalog.js';
import { PGLITE_VERSION, readBackupFile, type BackupHeader } from './file.js';

/** The restore was refused; nothing was changed. */
export class RestoreRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreRefused';
  }
}

export interface RestoreResult {
  header: BackupHeader;
  /** Where the folder that was replaced now is (undefined: there was none). */
  keptAside: string | undefined;
  /** Migrations applied on top of the backup's schema version. */
  applied: number[];
}

const pgMajor = (versionNum: number) => Math.floor(versionNum / 10_000);

export async function restorePglite(folder: string, file: string, options: { force: boolean; migrations: Migration[] }): Promise<RestoreResult> {
  const { header, payload } = await readBackupFile(file);
  const shipped = options.migrations.at(-1)?.version ?? 0;
  if ((header.schema_version ?? 0) > shipped) {
    throw new RestoreRefused(
      `${file} is at schema version ${header.schema_version}, newer than this service (its migrations go up to ${shipped}): ` +
        'restore it with the release that wrote it, or a later one; nothing was changed',
    );
  }
  const lock = lockDataFolder(folder);
  const staging = `${folder}.restoring`;
  try {
    const exists = existsSync(folder) && readdirSync(folder).length > 0;
    if (exists && !options.force) {
      const db = await openPglite({ dataDir: folder, lockHeld: true });
      const filled = await tablesWithRows(db).finally(() => db.close());
      if (filled.length > 0) {
        throw new RestoreRefused(`${folder} is not empty (rows in ${filled.join(', ')}): add --force to replace it (it is kept aside, not deleted); nothing was changed`);
      }
    }
    await rm(staging, { recursive: true, force: true });
    let db;
    try {
      db = await openPglite({ dataDir: staging, loadDataDir: payload });
    } catch (err) {
      throw new RestoreRefused(
        `the backup could not be opened (${(err as Error).message}). It was written by PGlite ${header.pglite_version} ` +
          `(PostgreSQL ${pgMajor(header.postgres_version_num)}), this is PGlite ${PGLITE_VERSION}: a data folder opens only on the ` +
          'PostgreSQL major version that wrote it; nothing was changed',
      );
    }
    const applied = await migrate(db, options.migrations).finally(() => db.close());
    const keptAside = exists ? `${folder}.before-restore-${new Date().toISOString().replace(/[-:.]/g, '')}` : undefined;
    if (keptAside) await rename(folder, keptAside);
    else await rm(folder, { recursive: true, force: true });
    await rename(staging, folder);
    const parent = await open(dirname(folder), 'r');
    await parent.sync().finally(() => parent.close());
    return { header, keptAside, applied };
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    lock.release();
  }
}
