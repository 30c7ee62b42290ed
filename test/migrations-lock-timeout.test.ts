// A migration behind a long transaction must not stall the writes (issue 40). Its ALTER TABLE waits
// for the table's lock, and every write to the table queues behind that wait: without a lock
// timeout, for as long as the transaction lasts. With MIGRATION_LOCK_TIMEOUT_MS the migration gives
// up after it, lets the queue through, and asks again until the transaction is gone. PostgreSQL
// only: PGlite has one connection, so nothing holds a lock while a migration waits. A report
// through the route; the long transaction and the extra migration by SQL, as an operator's
// session and a release's file would be.
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate, MIGRATION_LOCK_TIMEOUT_MS } from '../src/platform/db/migrate.js';
import { PROJECT_ROOT } from '../src/platform/paths.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { onPostgres } from './helpers/stores.js';

describe.runIf(onPostgres)('a migration behind a long transaction', () => {
  let t: TestApp;
  const crud = reportCrudHelpers(() => t);
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('lets writes through while it waits, and applies once the transaction has ended', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cms-migrations-'));
    cpSync(join(PROJECT_ROOT, 'migrations'), dir, { recursive: true });
    const next = loadMigrations(dir).length + 1;
    writeFileSync(join(dir, `${String(next).padStart(4, '0')}_lock_timeout_check.sql`), 'alter table reports add column lock_timeout_check integer;\n');
    const reader = new pg.Client({ connectionString: t.urls.production });
    await reader.connect();
    try {
      // A long report export, say: it holds the table's ACCESS SHARE lock until it ends.
      await reader.query('begin');
      await reader.query('select count(*) from reports');
      const migrating = migrate(t.db.production, loadMigrations(dir));
      // It ends 3 s from now whatever else happens.
      const ended = new Promise((resolve) => setTimeout(resolve, 3_000)).then(() => reader.query('commit'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const waits: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await crud.createOk();
        waits.push(performance.now() - started);
      }
      await ended;
      expect(await migrating).toEqual([next]);
      // Each create waited at most for one attempt's lock timeout, not for the transaction.
      expect(Math.max(...waits)).toBeLessThan(MIGRATION_LOCK_TIMEOUT_MS + 700);
      const { rows } = await t.db.production.query<{ n: number }>("select count(*)::int as n from information_schema.columns where table_name = 'reports' and column_name = 'lock_timeout_check'");
      expect(rows[0]!.n).toBe(1);
    } finally {
      await reader.end();
    }
  }, 60_000);
});
