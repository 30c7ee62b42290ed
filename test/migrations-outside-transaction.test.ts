// Migrations that do not stall writes (issue 40): a `--! no-transaction` migration runs statement by
// statement, so that CREATE INDEX CONCURRENTLY can build an index while writes go on and a large
// rewrite commits batch by batch. The migrations under test are a release's files in a copy of the
// migrations folder, on tables of their own (this is the runner's test, not a domain's).
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkMarkers, inTransactionForm, splitStatements } from '../src/platform/db/migrate-statements.js';
import { applyMigration, loadMigrations, migrate } from '../src/platform/db/migrate.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { PROJECT_ROOT } from '../src/platform/paths.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { onPostgres, storeName } from './helpers/stores.js';

/** A copy of the migrations folder with `files` added after the last one; returns the folder. */
function withMigrations(files: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'cms-migrations-'));
  cpSync(join(PROJECT_ROOT, 'migrations'), dir, { recursive: true });
  const first = loadMigrations(dir).length + 1;
  files.forEach((sql, i) => writeFileSync(join(dir, `${String(first + i).padStart(4, '0')}_outside_check_${i}.sql`), sql));
  return dir;
}

const FILL = `create table outside_check (id integer primary key, v integer not null);
insert into outside_check select n, n from generate_series(1, 12000) n;
`;
const OUTSIDE = `--! no-transaction
-- A column filled in batches of 5,000, then indexed without stopping writes.
alter table outside_check add column if not exists doubled integer;
--! repeat until no rows
update outside_check set doubled = v * 2 where id in (select id from outside_check where doubled is null limit 5000);
create index concurrently if not exists outside_check_doubled_idx on outside_check (doubled);
`;

describe('the statements of a migration outside a transaction', () => {
  it('splits on statements, not on semicolons in quotes, dollar quotes or comments, and reads the markers', () => {
    const statements = splitStatements('0099_x.sql', `--! no-transaction
-- one; two
create function outside_f() returns text language sql as $$ select 'a;b' $$;
--! repeat until no rows
delete from t where id in (select id from t limit 10);
/* x; */ create unique index concurrently if not exists "t_x;idx" on t (x);
`);
    expect(statements).toEqual([
      { sql: "create function outside_f() returns text language sql as $$ select 'a;b' $$", repeat: false, concurrentIndex: undefined },
      { sql: 'delete from t where id in (select id from t limit 10)', repeat: true, concurrentIndex: undefined },
      { sql: 'create unique index concurrently if not exists "t_x;idx" on t (x)', repeat: false, concurrentIndex: 't_x;idx' },
    ]);
  });

  it('refuses a concurrent build without IF NOT EXISTS and a repeat marker on anything but a batch, naming the file', () => {
    expect(() => splitStatements('0099_x.sql', '--! no-transaction\ncreate index concurrently t_idx on t (x);\n')).toThrow(/0099_x\.sql: "create index concurrently t_idx on t \(x\)…" must name its index and say IF NOT EXISTS/);
    expect(() => splitStatements('0099_x.sql', '--! no-transaction\ncreate /* built late */ index\n  concurrently t_idx on t (x);\n')).toThrow(/must name its index and say IF NOT EXISTS/);
    expect(() => splitStatements('0099_x.sql', '--! no-transaction\n--! repeat until no rows\nselect 1;\n')).toThrow(/0099_x\.sql: "--! repeat until no rows" marks an UPDATE or DELETE/);
    // A WITH ... SELECT counts the rows it returns (one, always): it would never stop.
    expect(() => splitStatements('0099_x.sql', '--! no-transaction\n--! repeat until no rows\nwith d as (delete from t where id in (select id from t limit 10) returning 1) select count(*) from d;\n')).toThrow(/marks an UPDATE or DELETE/);
  });

  it('refuses, in a no-transaction file, a marker it does not know (a misspelt repeat would run its batch once) and an index name PostgreSQL would cut', () => {
    for (const marker of ['--! repeat until no row', '--!repeat until no rows', '--! Repeat until no rows']) {
      expect(() => splitStatements('0099_x.sql', `--! no-transaction\n${marker}\nupdate t set x = 1 where id in (select id from t where x is null limit 5000);\n`)).toThrow(/0099_x\.sql: "--! ?[a-zA-Z -]+" is not a marker this runner knows/);
    }
    expect(() => splitStatements('0099_x.sql', `--! no-transaction\ncreate index concurrently if not exists ${'x'.repeat(64)} on t (v);\n`)).toThrow(/0099_x\.sql: the index name x{64} is longer than PostgreSQL keeps \(63 bytes\)/);
  });

  it('refuses a marker in a file whose first line is not the no-transaction marker (it would run in one transaction, each batch once)', () => {
    for (const sql of ['-- 0036: fill v\n--! no-transaction\nselect 1;\n', '\n--! no-transaction\nselect 1;\n', '--!  no-transaction\nselect 1;\n', '--! NO-TRANSACTION\nselect 1;\n']) {
      expect(() => checkMarkers('0099_x.sql', sql)).toThrow(/0099_x\.sql: a --! marker in a file whose first line is not exactly "--! no-transaction"/);
    }
    expect(() => checkMarkers('0099_x.sql', '--! no-transaction\r\nselect 1;\r\n')).not.toThrow();
    expect(() => checkMarkers('0099_x.sql', "select '--! not a marker';\n")).not.toThrow();
  });

  it('names an index as PostgreSQL does (unquoted folded, quoted kept), and its in-transaction form leaves CONCURRENTLY out past comments', () => {
    const [mixed, quoted, commented] = splitStatements(
      '0099_x.sql',
      '--! no-transaction\ncreate unique index concurrently if not exists T_Code_Idx on t (code);\ncreate index concurrently if not exists "Odd ""Name""" on t (code);\ncreate /* late */ index concurrently if not exists t_late_idx on t (code);\n',
    );
    expect([mixed!.concurrentIndex, quoted!.concurrentIndex, commented!.concurrentIndex]).toEqual(['t_code_idx', 'Odd "Name"', 't_late_idx']);
    expect(inTransactionForm(commented!)).toBe('create   index if not exists t_late_idx on t (code)');
    const [drop] = splitStatements('0099_x.sql', '--! no-transaction\ndrop index concurrently if exists t_old_idx;\n');
    expect(inTransactionForm(drop!)).toBe('drop index if exists t_old_idx');
  });
});

describe(`a --! no-transaction migration, on ${storeName}`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await createTestApp();
  });
  afterEach(() => t?.close());

  it('runs statement by statement: each batch committed alone until none is left, the index valid, recorded once', async () => {
    const migrations = loadMigrations(withMigrations([FILL, OUTSIDE]));
    const [fill, outside] = migrations.slice(-2).map((m) => m.version);
    expect(await t.db.production.direct((db) => migrate(db, migrations))).toEqual([fill, outside]);
    const db = t.db.production;
    const { rows: [filled] } = await db.query<{ rows: number; wrong: number; batches: number }>(
      'select count(*)::int as rows, count(*) filter (where doubled is distinct from v * 2)::int as wrong, count(distinct xmin::text)::int as batches from outside_check',
    );
    // 12,000 rows in batches of 5,000: three transactions of their own.
    expect(filled).toEqual({ rows: 12000, wrong: 0, batches: 3 });
    const { rows: index } = await db.query<{ valid: boolean }>("select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'outside_check_doubled_idx'");
    expect(index).toEqual([{ valid: true }]);
    const { rows: recorded } = await db.query<{ version: number; name: string }>('select version, name from schema_migrations where version >= $1::int order by version', [fill]);
    expect(recorded).toEqual([{ version: fill, name: 'outside_check_0' }, { version: outside, name: 'outside_check_1' }]);
    // The lock and the session's lock_timeout are given back.
    const { rows: locks } = await db.query<{ n: number }>("select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())");
    expect(locks[0]!.n).toBe(0);
    // Applied once: the next start applies nothing, and a changed file is refused.
    expect(await t.db.production.direct((d) => migrate(d, migrations))).toEqual([]);
    const changed = migrations.map((m) => (m.version === outside ? { ...m, checksum: 'changed' } : m));
    await expect(t.db.production.direct((d) => migrate(d, changed))).rejects.toThrow(/Migration \d+_outside_check_1 was changed after it was applied/);
  });

  it('a concurrent build cut short leaves an invalid index, dropped and built again at the next start (its name in capitals, which PostgreSQL folds)', async () => {
    const fill = "create table unique_check (id integer primary key, code text not null);\ninsert into unique_check select n, 'c' || (n % 500) from generate_series(1, 1000) n;\n";
    const build = '--! no-transaction\ncreate unique index concurrently if not exists Unique_Check_Code_Idx on unique_check (code);\n';
    const migrations = loadMigrations(withMigrations([fill, build]));
    const db = t.db.production;
    // Duplicate codes: the build fails (23505) and leaves its index behind, invalid.
    await expect(db.direct((d) => migrate(d, migrations))).rejects.toMatchObject({ code: '23505' });
    const valid = async () => (await db.query<{ valid: boolean }>("select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'unique_check_code_idx'")).rows;
    expect(await valid()).toEqual([{ valid: false }]);
    const last = migrations.at(-1)!.version;
    expect((await db.query('select 1 from schema_migrations where version = $1::int', [last])).rows).toEqual([]);
    // The operator removes the duplicates; the next start builds the index again.
    await db.query("delete from unique_check where id > 500");
    expect(await db.direct((d) => migrate(d, migrations))).toEqual([last]);
    expect(await valid()).toEqual([{ valid: true }]);
  });

  it('in one transaction (move-to-postgres fills an empty database so) runs the same file without CONCURRENTLY', async () => {
    const migrations = loadMigrations(withMigrations([FILL, OUTSIDE])).slice(-2);
    await t.db.production.transaction(async (tx) => {
      for (const migration of migrations) expect(await applyMigration(tx, migration)).toBe(true);
    });
    const { rows } = await t.db.production.query<{ wrong: number }>('select count(*) filter (where doubled is distinct from v * 2)::int as wrong from outside_check');
    expect(rows).toEqual([{ wrong: 0 }]);
    const { rows: index } = await t.db.production.query<{ valid: boolean }>("select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'outside_check_doubled_idx'");
    expect(index).toEqual([{ valid: true }]);
  });
});

describe.runIf(onPostgres)('a concurrent index build on a large table, with writes going on', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  /**
   * An insert every 20 ms into the table while `migrating` runs: the longest wait, and how often a
   * look at the writer's backend (every 10 ms) found it waiting for a lock.
   */
  async function writesDuring(url: string, migrating: Promise<unknown>): Promise<{ longestMs: number; lockWaitsSeen: number }> {
    const writer = new pg.Client({ connectionString: url });
    const watcher = new pg.Client({ connectionString: url });
    await writer.connect();
    await watcher.connect();
    const pid = (await writer.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    let done = false;
    void migrating.finally(() => (done = true)).catch(() => undefined);
    let lockWaitsSeen = 0;
    const watching = (async () => {
      while (!done) {
        const { rows } = await watcher.query<{ lock: boolean }>("select wait_event_type = 'Lock' as lock from pg_stat_activity where pid = $1::int", [pid]);
        if (rows[0]?.lock) lockWaitsSeen++;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const waits: number[] = [];
    try {
      for (let id = 1; !done; id++) {
        const started = performance.now();
        await writer.query('insert into big_check (id, label) values ($1::int, $2::text) on conflict do nothing', [-id, `w${id}`]);
        waits.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await migrating;
      await watching;
    } finally {
      await writer.end();
      await watcher.end();
    }
    return { longestMs: Math.round(Math.max(...waits)), lockWaitsSeen };
  }

  it('lets every write through at once, where the same index built in the transaction stops them for its whole build', async () => {
    const fill = "create table big_check (id integer primary key, label text not null);\ninsert into big_check select n, md5(n::text) from generate_series(1, 1500000) n;\n";
    const dir = withMigrations([fill]);
    await t.db.production.direct((db) => migrate(db, loadMigrations(dir)));
    const url = t.urls.production!;

    const inTransaction = withMigrations([fill, 'create index big_check_label_plain_idx on big_check (label);\n']);
    const blocked = await writesDuring(url, t.db.production.direct((db) => migrate(db, loadMigrations(inTransaction))));
    const outside = withMigrations([fill, 'create index big_check_label_plain_idx on big_check (label);\n', '--! no-transaction\ncreate index concurrently if not exists big_check_label_idx on big_check (label);\n']);
    const concurrent = await writesDuring(url, t.db.production.direct((db) => migrate(db, loadMigrations(outside))));
    console.log(`index build of 1.5M rows: in the transaction ${JSON.stringify(blocked)}, outside it (CONCURRENTLY) ${JSON.stringify(concurrent)}`);
    // The plain build held the writer on the table's lock; the concurrent one never did.
    expect(blocked.lockWaitsSeen).toBeGreaterThan(0);
    expect(concurrent.lockWaitsSeen).toBe(0);
  }, 120_000);
});

describe.runIf(onPostgres)('instances migrating together, one migration outside a transaction', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await createTestApp();
  });
  afterEach(() => t?.close());

  const instance = () => openPostgres({ connectionString: t.urls.production!, max: 2 });
  const rows = async (sql: string) => (await t.db.production.query(sql)).rows;

  it('a statement that gave up on a lock and tried again kept the migration to one instance (the retry takes the lock again)', async () => {
    const dir = withMigrations([
      'create table lock_check (id integer);\ncreate table lock_check_runs (pid integer not null default pg_backend_pid());\n',
      '--! no-transaction\nalter table lock_check add column if not exists x integer;\ninsert into lock_check_runs default values;\nselect pg_sleep(1.5);\n',
    ]);
    const migrations = loadMigrations(dir);
    const [a, b] = [instance(), instance()];
    try {
      await a.direct((d) => migrate(d, migrations.slice(0, -1)));
      // An operator's long transaction holds the table: the first statement gives up and tries again.
      const blocker = new pg.Client({ connectionString: t.urls.production });
      await blocker.connect();
      await blocker.query('begin');
      await blocker.query('lock table lock_check in access exclusive mode');
      const first = a.direct((d) => migrate(d, migrations));
      setTimeout(() => void blocker.query('commit').then(() => blocker.end()), 1_500);
      while ((await rows('select 1 from lock_check_runs')).length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      // The second instance boots while the first runs the statements after its retry.
      const second = b.direct((d) => migrate(d, migrations));
      const applied = await Promise.all([first, second]);
      const last = migrations.at(-1)!.version;
      expect(applied).toEqual([[last], []]);
      expect(await rows('select count(*)::int as n from lock_check_runs')).toEqual([{ n: 1 }]);
      expect(await rows(`select version from schema_migrations where version = ${last}`)).toEqual([{ version: last }]);
    } finally {
      await a.close();
      await b.close();
    }
  }, 30_000);

  it("a wait for the migrations' lock is said, naming who holds it, and ends when the lock is let go", async () => {
    const dir = withMigrations(['--! no-transaction\ncreate table if not exists wait_check (id integer);\n']);
    const migrations = loadMigrations(dir);
    const [a] = [instance()];
    // An operator's session holds the key (as a build of another instance would).
    const holder = new pg.Client({ connectionString: t.urls.production, application_name: 'operator-psql' });
    await holder.connect();
    try {
      const { rows: [held] } = await holder.query<{ pid: number }>('select pg_backend_pid() as pid, pg_advisory_lock(4207110914)');
      const said: { details: Record<string, unknown>; message: string }[] = [];
      const log = { warn: (details: object, message: string) => void said.push({ details: details as Record<string, unknown>, message }) };
      const migrating = a.direct((d) => migrate(d, migrations, { log, lockWaitLogMs: { first: 300, every: 400 } }));
      // Said after 0.3 s, then every 0.4 s: twice within 5 s.
      for (const until = Date.now() + 5_000; said.length < 2 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 50));
      await holder.query('select pg_advisory_unlock(4207110914)');
      const last = migrations.at(-1)!;
      expect(await migrating).toEqual([last.version]);
      const name = `${String(last.version).padStart(4, '0')}_${last.name}`;
      expect(said.length).toBeGreaterThanOrEqual(2);
      expect(said[0]).toEqual({
        details: { migration: name, waited_s: expect.any(Number), holders: [{ pid: held!.pid, application_name: 'operator-psql', state: 'idle' }] },
        message: `migration ${name} waits for the migrations' lock, held by pid ${held!.pid} (operator-psql, idle)`,
      });
      expect(await rows("select count(*)::int as n from information_schema.tables where table_name = 'wait_check'")).toEqual([{ n: 1 }]);
    } finally {
      await holder.end();
      await a.close();
    }
  }, 30_000);

  it('a concurrent build while another instance of this release, and one of the release before, boot: no deadlock, built once', async () => {
    const dir = withMigrations([
      'create table together_check (id integer primary key, label text not null);\ninsert into together_check select n, md5(n::text) from generate_series(1, 300000) n;\n',
      '--! no-transaction\nselect pg_sleep(0.5);\ncreate index concurrently if not exists together_check_label_idx on together_check (label);\n',
    ]);
    const migrations = loadMigrations(dir);
    const [a, b, before] = [instance(), instance(), instance()];
    try {
      await a.direct((d) => migrate(d, migrations.slice(0, -1)));
      const first = a.direct((d) => migrate(d, migrations));
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The release before knows every migration but the last: its boot takes the transactional
      // path for each (its count differs from the table's), as 0.3.0 does.
      const results = await Promise.allSettled([first, b.direct((d) => migrate(d, migrations)), before.direct((d) => migrate(d, migrations.slice(0, -1)))]);
      const last = migrations.at(-1)!.version;
      expect(results).toEqual([{ status: 'fulfilled', value: [last] }, { status: 'fulfilled', value: [] }, { status: 'fulfilled', value: [] }]);
      expect(await rows("select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'together_check_label_idx'")).toEqual([{ valid: true }]);
    } finally {
      await a.close();
      await b.close();
      await before.close();
    }
  }, 60_000);
});
