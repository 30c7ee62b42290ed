// backup, restore and move-to-postgres as operators run them: the built dist/src/cli.js in a child
// process (`npm run build` first). The embedded commands run on PGlite runs (an embedded folder is
// the same on either run); the PostgreSQL ones (move-to-postgres, pg_dump) need TEST_DATABASE_URL.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetDemo } from '../src/demo/seed.js';
import { BACKUP_MAGIC } from '../src/platform/backup/file.js';
import { lockDataFolder } from '../src/platform/db/lock-file.js';
import { loadMigrations, migrate } from '../src/platform/db/migrate.js';
import { openPglite } from '../src/platform/db/pglite.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import { createTestApp, PRODUCTION_KEY } from './helpers/app.js';
import { adminQuery, createTestDatabase, databaseEnv, onPostgres, prepareDataDir } from './helpers/stores.js';
import { everyTable } from './helpers/tables.js';
import { NODE_FLAGS } from './helpers/service-process.js';

const CLI = join(import.meta.dirname, '../dist/src/cli.js');
const LATEST = loadMigrations().at(-1)!.version;
let dataDir: string;
const folder = () => join(dataDir, 'production');

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, ...env }, cwd: dataDir }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function inFolder<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await openPglite({ dataDir: folder() });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

beforeAll(async () => {
  dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-backup-cli-')), ['production']);
  // An embedded production environment full of the demo organisation's records.
  await inFolder(async (db) => {
    await migrate(db);
    await db.transaction(resetDemo);
  });
}, 120_000);
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe.skipIf(onPostgres)('backup and restore of an embedded environment', () => {
  it('restores the backup exactly, every table; refuses a held folder, data without --force and a newer schema', async () => {
    const file = join(dataDir, 'production.cmsbackup');
    const backedUp = await inFolder(everyTable);
    const backup = await cli(['backup', '--env', 'production', '--out', file]);
    expect(backup).toMatchObject({ code: 0, stderr: '' });
    expect(backup.stdout).toMatch(new RegExp(`^production: backup written to ${file} \\(\\d+\\.\\d MB, schema version ${LATEST}\\)\\n$`));
    expect((await cli(['backup', '--env', 'production', '--out', file])).code).toBe(1); // never overwritten

    // Changes after the backup, which the restore must undo.
    await inFolder(async (db) => {
      // A timeline outlives its report only as its pre-image's (migration 0025): removed here with it.
      await db.query(`delete from report_timeline where report_id = (select min(report_id) from reports)`);
      await db.query(`delete from reports where report_id = (select min(report_id) from reports)`);
    });

    const lock = lockDataFolder(folder());
    try {
      const held = await cli(['restore', '--env', 'production', '--from', file, '--force']);
      expect(held.code).toBe(1);
      expect(held.stderr).toContain(`is in use by process ${process.pid}`);
    } finally {
      lock.release();
    }

    const bytes = await readFile(file);
    const headerEnd = bytes.indexOf(0x0a, BACKUP_MAGIC.length + 1);
    const header = JSON.parse(bytes.subarray(BACKUP_MAGIC.length + 1, headerEnd).toString());
    const newer = join(dataDir, 'newer.cmsbackup');
    await writeFile(newer, Buffer.concat([Buffer.from(`${BACKUP_MAGIC}\n${JSON.stringify({ ...header, schema_version: LATEST + 1 })}`), bytes.subarray(headerEnd)]));
    const refusedNewer = await cli(['restore', '--env', 'production', '--from', newer, '--force']);
    expect(refusedNewer.code).toBe(1);
    expect(refusedNewer.stderr).toContain(`is at schema version ${LATEST + 1}, newer than this service (its migrations go up to ${LATEST})`);

    const refusedFull = await cli(['restore', '--env', 'production', '--from', file]);
    expect(refusedFull.code).toBe(1);
    expect(refusedFull.stderr).toMatch(/is not empty \(rows in .*reports.*\): add --force to replace it/);
    expect(await inFolder(everyTable)).not.toEqual(backedUp); // untouched by the refusals

    const restored = await cli(['restore', '--env', 'production', '--from', file, '--force']);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain(`production: restored ${file} (taken ${header.created_at} from production, schema version ${LATEST})`);
    const aside = /kept at (\S+);/.exec(restored.stdout)![1]!;
    expect(aside.startsWith(`${folder()}.before-restore-`)).toBe(true);
    expect(await inFolder(everyTable)).toEqual(backedUp);
  }, 240_000);
});

describe.skipIf(!onPostgres)('on PostgreSQL', () => {
  const empty = async () => {
    const name = `cms_move_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    await adminQuery(`create database ${name}`);
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${name}`;
    return { name, url: url.toString() };
  };
  const created: string[] = [];
  afterAll(() => Promise.all(created.map((name) => adminQuery(`drop database if exists ${name} with (force)`))));

  it('move-to-postgres copies every table, sequences continue, a second run is refused', async () => {
    const target = await empty();
    created.push(target.name);
    const source = await inFolder(everyTable);
    const moved = await cli(['move-to-postgres', '--env', 'production', '--to', target.url]);
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/every count and checksum matches/);
    expect(moved.stdout.trim().split('\n').at(-1)).toBe(`PRODUCTION_DATABASE_URL=${target.url}`);

    const db = openPostgres({ connectionString: target.url, max: 2 });
    try {
      expect(await everyTable(db)).toEqual(source);
      // The service pointed at the target: a new report and its event get fresh ids.
      const maxEvent = (await db.query<{ id: number }>('select max(id) as id from events')).rows[0]!.id;
      const t = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: target.url, max: 2 }) } });
      try {
        const res = await t.app.inject({
          method: 'POST', url: '/reports/create', headers: { authorization: PRODUCTION_KEY },
          payload: { report_id: 'R-AFTER-MOVE', reporter: 'Reporter', reported: 'Reported', reason: 'After the move', notes: 'n', evidence: 'e' },
        });
        expect(res.statusCode).toBe(201);
      } finally {
        await t.close();
      }
      const events = (await db.query<{ id: number }>(`select id from events where report_id = 'R-AFTER-MOVE'`)).rows;
      expect(events.length).toBeGreaterThan(0);
      for (const e of events) expect(e.id).toBeGreaterThan(maxEvent);
      const counts = (await db.query<{ n: number }>(`select coalesce(sum(n), 0)::int as n from report_counts`)).rows[0]!.n;
      expect(counts).toBe(source.reports!.length + 1); // counters copied, not counted twice

      const before = await everyTable(db);
      const again = await cli(['move-to-postgres', '--env', 'production', '--to', target.url]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('the target database is not empty');
      expect(await everyTable(db)).toEqual(before);
    } finally {
      await db.close();
    }
  }, 180_000);

  it('backup uses pg_dump on a PostgreSQL environment; pg_restore gives the same tables', async () => {
    const live = await createTestDatabase();
    const restoredDb = await empty();
    created.push(restoredDb.name);
    try {
      await live.db.transaction(resetDemo);
      const file = join(dataDir, 'pg.dump');
      const backup = await cli(['backup', '--env', 'production', '--out', file], databaseEnv('PRODUCTION', live));
      expect(backup).toMatchObject({ code: 0, stderr: '' });
      expect(backup.stdout).toContain('by pg_dump (custom format');
      await new Promise<void>((resolve, reject) =>
        execFile('pg_restore', ['--no-owner', `--dbname=${restoredDb.url}`, file], (err) => (err ? reject(err) : resolve())),
      );
      const copy = openPostgres({ connectionString: restoredDb.url, max: 1 });
      try {
        expect(await everyTable(copy)).toEqual(await everyTable(live.db));
      } finally {
        await copy.close();
      }
    } finally {
      await live.drop();
    }
  }, 120_000);
});
