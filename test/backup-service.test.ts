// Backups by the running service (BACKUP_DIR, BACKUP_INTERVAL_MINUTES, BACKUP_KEEP): files appear
// whole on the schedule, pruned to BACKUP_KEEP per environment, the health answer's database
// section shows the last good one (and warns when the latest failed), the timers stop at close.
// And the copy itself: taken while transactions run, it restores to a state that existed.
// The service backs up only embedded environments: on PostgreSQL the section says null.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBackupFile } from '../src/platform/backup/file.js';
import { openPglite, type PgliteDb } from '../src/platform/db/pglite.js';
import { admin } from './helpers/admin.js';
import { createHealthTestApp, health } from './helpers/admin-health.js';
import { createMetricsTestApp, scrape, value, type MetricsTestApp } from './helpers/metrics.js';
import type { TestApp } from './helpers/app.js';
import type { Person } from './helpers/identity.js';
import { createTestDatabase, onPostgres, storeName } from './helpers/stores.js';
import { everyTable } from './helpers/tables.js';

const INTERVAL_MINUTES = 0.01; // 0.6 s
let dir: string;
let t: TestApp;
let director: Person;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cms-backups-'));
  t = await createHealthTestApp({ env: { BACKUP_DIR: dir, BACKUP_INTERVAL_MINUTES: String(INTERVAL_MINUTES), BACKUP_KEEP: '1' } });
  director = await admin(t);
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

const files = async () => (await readdir(dir)).sort();
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; files: ${(await files()).join(', ')}`);
    await sleep(100);
  }
}

describe.skipIf(onPostgres)('scheduled backups on pglite', () => {
  // Past these cases the file's app has no use for its backups: each round copies both databases
  // (most of a 0.6 s interval), CPU the cases below would wait for.
  afterAll(() => t.environments.backups!.stop());

  it('writes each environment on the schedule, whole, keeps BACKUP_KEEP (1), and shows the last good one in health', async () => {
    // Two rounds: with BACKUP_KEEP=1 the second prunes the first.
    const written = new Set<string>();
    // A round's new file is in place a moment before its prune runs: the folder is read once
    // each environment is down to BACKUP_KEEP again (never, if pruning failed: the wait fails).
    const rounds = await until('two rounds of backups, each environment pruned to BACKUP_KEEP', async () => {
      const file = t.environments.get('demo')!.backup!.lastGoodFile;
      if (file) written.add(file);
      if (written.size < 2) return undefined;
      const now = await files();
      return ['production', 'demo'].every((env) => now.filter((n) => n.startsWith(`${env}-`)).length === 1) ? now : undefined;
    });
    for (const env of ['production', 'demo']) {
      const mine = rounds.filter((n) => n.startsWith(`${env}-`));
      expect(mine.length, env).toBe(1);
      for (const name of mine) expect(name).toMatch(new RegExp(`^${env}-\\d{8}T\\d{9}Z\\.cmsbackup$`));
    }
    // No temporary file is ever left in view under a backup's name; the files are whole backups.
    expect(rounds.filter((n) => !n.endsWith('.cmsbackup') && !n.endsWith('.tmp'))).toEqual([]);
    const status = t.environments.get('production')!.backup!;
    const { header, payload } = await readBackupFile(status.lastGoodFile!);
    expect(header).toMatchObject({ environment: 'production', schema_version: expect.any(Number), payload: 'pglite-datadir-tar-gzip' });
    const restored = await openPglite({ loadDataDir: payload });
    try {
      expect((await restored.query('select count(*) as n from schema_migrations')).rows[0]).toEqual({ n: header.schema_version });
      expect((await restored.query('select count(*) as n from agents where chat_id = $1::text', [director.agent.chat_id])).rows[0]).toEqual({ n: 1 });
    } finally {
      await restored.close();
    }

    const { res, body } = await health(t, director);
    expect(res.statusCode).toBe(200);
    expect(body.database.status).toBe('ok');
    expect(body.database.backup).toEqual({
      last_good_at: expect.any(String),
      last_error_at: null,
      last_error: null,
      interval_s: INTERVAL_MINUTES * 60,
    });
    expect(Date.parse(body.database.backup.last_good_at)).toBeGreaterThanOrEqual(status.lastGoodAt!.getTime() - 10_000);
  });

  it('warns in the database section while the latest backup fails, keeping the last good time', async () => {
    const lastGood = t.environments.get('production')!.backup!.lastGoodAt!;
    // The next round cannot write. A round under way may recreate the folder between the rm and
    // the write (the schedule is 0.6 s): take the place again until the file holds it.
    for (;;) {
      await rm(dir, { recursive: true, force: true });
      try {
        await writeFile(dir, 'not a folder', { flag: 'wx' });
        break;
      } catch (e) {
        if (!['EEXIST', 'EISDIR'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
      }
    }
    try {
      // The latest round's outcome is the failure: a round that began before the folder was taken
      // may still finish well after a failed one (seen on a loaded machine).
      await until('a failed backup, latest', async () => {
        const { lastErrorAt, lastGoodAt } = t.environments.get('production')!.backup!;
        return lastErrorAt && (!lastGoodAt || lastErrorAt > lastGoodAt) ? lastErrorAt : undefined;
      });
      const { body } = await health(t, director);
      expect(body.database.status).toBe('warn');
      expect(body.database.reasons.join(' ')).toMatch(/^the latest scheduled backup failed: .+ \(last good one: \d{4}-/);
      expect(body.database.backup.last_error).toEqual(expect.any(String));
      expect(Date.parse(body.database.backup.last_good_at)).toBeGreaterThanOrEqual(lastGood.getTime());
    } finally {
      await rm(dir, { force: true });
      await import('node:fs/promises').then((fs) => fs.mkdir(dir, { recursive: true })); // a round may have made it already
    }
  });

  it('stops at close: no backup is written after the environments close', async () => {
    const closing = join(dir, 'closing');
    const extra = await createHealthTestApp({ env: { BACKUP_DIR: closing, BACKUP_INTERVAL_MINUTES: String(INTERVAL_MINUTES) } });
    await extra.close();
    // A backup under way at close was finished by it; none starts afterwards.
    const atClose = await readdir(closing).catch(() => []);
    expect(atClose.filter((n) => n.endsWith('.tmp'))).toEqual([]);
    await sleep(INTERVAL_MINUTES * 60_000 * 3);
    expect(await readdir(closing).catch(() => [])).toEqual(atClose);
  });
});

describe.skipIf(!onPostgres)(`scheduled backups on ${storeName}`, () => {
  it('backs up no PostgreSQL environment: the health section says null and no file is written', async () => {
    await sleep(INTERVAL_MINUTES * 60_000 * 3);
    expect(await files()).toEqual([]);
    expect(t.environments.backups!.status('production')).toBeUndefined();
    const { body } = await health(t, director);
    expect(body.database).toMatchObject({ status: 'ok', backup: null });
  });
});

describe.skipIf(onPostgres)('a backup taken while transactions run (pglite)', () => {
  it('restores to a state that existed: every report with its event, the counters agreeing', async () => {
    const source = (await createTestDatabase()).db as PgliteDb;
    let stop = false;
    let committed = 0;
    // Each transaction writes a report, then (after a turn of the event loop) its event.
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        await source.transaction(async (tx) => {
          const id = `BK-${i}`;
          await tx.query(`insert into reports (report_id, reporter, reported, reason, notes, evidence) values ($1::text, 'a', 'b', 'r', '', '')`, [id]);
          await sleep(1);
          await tx.query(`insert into events (type, actor_kind, report_id, correlation_id) values ('report.created', 'system', $1::text, 'backup-test')`, [id]);
        });
        committed++;
      }
    })();
    try {
      await until('some writes', async () => (committed >= 20 ? true : undefined));
      const before = committed;
      const snapshot = await source.snapshot();
      const after = committed;
      await until('more writes', async () => (committed >= after + 5 ? true : undefined));
      stop = true;
      await writer;

      const restored = await openPglite({ loadDataDir: snapshot.tarball });
      try {
        const tables = await everyTable(restored);
        const reports = tables.reports!.map((r) => JSON.parse(r).report_id as string).filter((id) => id.startsWith('BK-'));
        const events = tables.events!.map((r) => JSON.parse(r)).filter((e) => e.correlation_id === 'backup-test').map((e) => e.report_id as string);
        expect(reports.length).toBeGreaterThanOrEqual(before);
        expect(reports.length).toBeLessThanOrEqual(after + 1);
        expect(events.sort()).toEqual(reports.sort());
        // The writes were sequential: the copy holds exactly the first n of them.
        expect(new Set(reports)).toEqual(new Set(Array.from({ length: reports.length }, (_, i) => `BK-${i}`)));
        const counted = (await restored.query<{ n: number }>(`select coalesce(sum(n), 0)::int as n from report_counts`)).rows[0]!.n;
        expect(counted).toBe((await restored.query<{ n: number }>('select count(*) as n from reports')).rows[0]!.n);
        expect(snapshot.schemaVersion).toBe(Number((await restored.query<{ v: number }>('select max(version) as v from schema_migrations')).rows[0]!.v));
      } finally {
        await restored.close();
      }
    } finally {
      stop = true;
      await writer.catch(() => undefined);
      await source.close();
    }
  });
});

describe('the last good backup in the metrics', () => {
  let m: MetricsTestApp;
  let metricsDir: string;
  /** Before the service starts: its first backups may finish before the test below begins. */
  let started: number;
  beforeAll(async () => {
    metricsDir = await mkdtemp(join(tmpdir(), 'cms-backups-metrics-'));
    started = Date.now() / 1000;
    m = await createMetricsTestApp({ env: { BACKUP_DIR: metricsDir, BACKUP_INTERVAL_MINUTES: String(INTERVAL_MINUTES) } });
  });
  afterAll(async () => {
    await m.close();
    await rm(metricsDir, { recursive: true, force: true });
  });

  it(`is cms_backup_last_success_timestamp_seconds per environment the service backs up (${storeName})`, async () => {
    if (onPostgres) {
      // PostgreSQL environments are backed up with PostgreSQL's tools: no series for them.
      const families = await scrape(m.metricsUrl);
      expect(families.get('cms_backup_last_success_timestamp_seconds')!.samples).toEqual([]);
      return;
    }
    await until('a backup of each environment', async () =>
      m.environments.get('production')!.backup!.lastGoodAt && m.environments.get('demo')!.backup!.lastGoodAt ? true : undefined,
    );
    const families = await scrape(m.metricsUrl);
    for (const environment of ['production', 'demo'] as const) {
      const seconds = value(families, 'cms_backup_last_success_timestamp_seconds', { environment })!;
      expect(seconds).toBeGreaterThanOrEqual(Math.floor(started) - 1);
      expect(seconds).toBeCloseTo(m.environments.get(environment)!.backup!.lastGoodAt!.getTime() / 1000, 0);
    }
  });
});
