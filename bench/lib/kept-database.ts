// Loaded databases kept between benchmark runs, named by their size (issue 22): generating ten
// million reports and ten million events takes minutes, so a run reuses the pair of databases a
// previous run loaded (`cms_bench_1m`, `cms_bench_1m_demo`; `cms_bench_10m`, …) when it finished
// loading them for the current schema, and loads them otherwise. Never part of `npm test`.
//
// Loading: the same migrations as the service, then the secondary indexes of `reports` and
// `events` dropped, the rows generated in the database (bench/lib/generate-data.ts), the indexes
// built again from their own definitions (a build is several times faster than ten million
// insertions into them), vacuum and analyse, and the events sealed into the audit chain as the
// service's sealer would (a service started on an unsealed backlog would seal it during the
// measurement). A table `bench_dataset` marks the rows loaded, then sealed; a run that stopped
// while sealing is resumed there, anything else is dropped and loaded again.
//
// A scenario that compares two builds (visibility-cost) keeps a pair per build, named with a
// suffix (`cms_bench_1m_vis_current`, `cms_bench_1m_vis_a0e34f2`), each migrated and sealed by its
// own build, so that neither build's newer schema drops the other's databases; it may add rows of
// its own to the load (`extend`).
import type { Db } from '../../src/platform/db/types.js';
import { thisBuild, type Build } from './builds.js';
import { generateReportsAndEvents } from './generate-data.js';
import { countAsOurs } from './machine.js';
import { admin, withDatabase, type BenchDatabases } from './pg.js';

/** Tables whose secondary indexes are built after the load instead of during it. */
const BULK_TABLES = ['reports', 'events'];
/** Vacuumed and analysed after the load (report_actions: what `extend` may have written). */
const LOADED_TABLES = ['reports', 'report_counts', 'events', 'report_actions'];
const SEAL_BATCH = 10_000;
/**
 * Vacuumed and analysed after the sealing, where the build has them. The test server runs without
 * autovacuum: unanalysed, audit_seal_salts (a million rows) looked small enough to a generic plan
 * to be hashed whole by every erasure's seal lookup (1.3 s an erasure instead of milliseconds).
 */
const SEAL_TABLES = ['audit_chain', 'audit_seal_salts', 'audit_log'];

/** `1m`, `10m`, `250k`: the size in the databases' names. */
export const sizeLabel = (rows: number): string =>
  rows % 1_000_000 === 0 ? `${rows / 1_000_000}m` : rows % 1_000 === 0 ? `${rows / 1_000}k` : String(rows);

/** The newest migration this build knows, as the loaded database must have recorded it. */
async function latestMigration(db: Db): Promise<string> {
  const { rows } = await db.query<{ version: string }>('select max(version)::text as version from schema_migrations');
  return rows[0]?.version ?? '';
}

type DatasetState = 'absent' | 'unsealed' | 'complete';

/**
 * What an earlier run left in the database: nothing usable (absent: no marker, another size, or a
 * schema this build would migrate), the rows without their seals (unsealed: the run stopped while
 * sealing), or everything.
 */
async function datasetState(build: Build, url: string, rows: number): Promise<DatasetState> {
  const db = build.openPostgres({ connectionString: url, max: 1 });
  try {
    const { rows: found } = await db.query<{ rows: number; schema: string; sealed: boolean }>(
      'select rows::int8 as rows, schema, sealed from bench_dataset',
    );
    const marker = found[0];
    if (marker?.rows !== rows || marker.schema !== (await latestMigration(db))) return 'absent';
    const before = marker.schema;
    await build.migrate(db); // a no-op when the build has no newer migration
    if ((await latestMigration(db)) !== before) return 'absent';
    return marker.sealed ? 'complete' : 'unsealed';
  } catch {
    return 'absent';
  } finally {
    await db.close();
  }
}

export interface KeptDatabases extends BenchDatabases {
  rows: number;
  /** Whether this run loaded them (else they were reused). */
  loaded: boolean;
}

export interface KeptOptions {
  /** Appended to the names (`cms_bench_1m_<suffix>`): lower-case letters, digits and `_`. */
  suffix?: string;
  /** The build that migrates and seals them (default this checkout's). */
  build?: Build;
  /** More rows, written after the reports and events, before the indexes are built. */
  extend?: (db: Db, rows: number) => Promise<void>;
}

/**
 * The production and demo databases holding `rows` reports and `rows` events next to `serverUrl`,
 * loaded if they are not already there. The server's work counts as part of the run from here on.
 */
export async function keptDatabases(serverUrl: string, rows: number, log: (line: string) => void, options: KeptOptions = {}): Promise<KeptDatabases> {
  countAsOurs('postgres');
  const build = options.build ?? thisBuild();
  if (options.suffix !== undefined && !/^[a-z0-9_]{1,30}$/.test(options.suffix)) throw new Error(`kept database suffix "${options.suffix}": lower-case letters, digits and _ only`);
  const name = `cms_bench_${sizeLabel(rows)}${options.suffix === undefined ? '' : `_${options.suffix}`}`;
  const urls = { productionUrl: withDatabase(serverUrl, name), demoUrl: withDatabase(serverUrl, `${name}_demo`) };
  const exists = await admin(serverUrl, async (c) => (await c.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1);
  const state = exists ? await datasetState(build, urls.productionUrl, rows) : 'absent';
  if (state === 'complete') {
    log(`    reusing ${name} (${rows.toLocaleString('en')} reports and events, loaded by an earlier run)`);
    return { ...urls, rows, loaded: false };
  }
  if (state === 'unsealed') {
    log(`    reusing ${name}, whose load stopped before its events were all sealed: sealing them`);
    await sealAndMark(build, urls.productionUrl, log);
    return { ...urls, rows, loaded: false };
  }
  await admin(serverUrl, async (c) => {
    for (const db of [name, `${name}_demo`]) {
      await c.query(`drop database if exists "${db}" with (force)`);
      await c.query(`create database "${db}"`);
    }
  });
  log(`    loading ${name} (${rows.toLocaleString('en')} reports and events, migrated by the ${build.label} build)`);
  await load(build, urls.productionUrl, rows, log, options.extend);
  await sealAndMark(build, urls.productionUrl, log);
  return { ...urls, rows, loaded: true };
}

async function load(build: Build, url: string, rows: number, log: (line: string) => void, extend: KeptOptions['extend']): Promise<void> {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  const db = build.openPostgres({ connectionString: url, max: 2 });
  try {
    await build.migrate(db);
    // Secondary indexes only: primary keys and unique constraints stay (the load must honour them).
    const { rows: indexes } = await db.query<{ name: string; definition: string }>(
      `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
         from pg_index i
        where i.indrelid = any($1::regclass[])
          and not exists (select from pg_constraint c where c.conindid = i.indexrelid)`,
      [BULK_TABLES],
    );
    for (const { name } of indexes) await db.exec(`drop index ${name}`);
    await generateReportsAndEvents(db, { reports: rows, events: rows }, { analyse: false });
    if (extend) await extend(db, rows);
    log(`    generated ${rows.toLocaleString('en')} reports and events without their ${indexes.length} secondary indexes in ${elapsed()}`);
    await db.exec(`set maintenance_work_mem = '1GB'; set max_parallel_maintenance_workers = 2`);
    for (const { definition } of indexes) await db.exec(definition);
    for (const table of LOADED_TABLES) await db.exec(`vacuum analyze ${table}`);
    log(`    built the indexes and vacuumed by ${elapsed()}`);
    const schema = await latestMigration(db);
    await db.exec('create table bench_dataset (rows int8 not null, schema text not null, sealed boolean not null, loaded_at timestamptz not null default now())');
    await db.query('insert into bench_dataset (rows, schema, sealed) values ($1, $2, false)', [rows, schema]);
  } finally {
    await db.close();
  }
}

/** Seals every event into the audit chain, as the service's sealer would, then marks the load complete. */
async function sealAndMark(build: Build, url: string, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  const db = build.openPostgres({ connectionString: url, max: 2 });
  try {
    let sealed = 0;
    for (;;) {
      const result = await build.sealAvailable(db, SEAL_BATCH);
      sealed += result.sealed;
      if (result.sealed === 0) break;
    }
    for (const table of SEAL_TABLES) {
      const { rows } = await db.query<{ found: boolean }>('select to_regclass($1::text) is not null as found', [table]);
      if (rows[0]?.found) await db.exec(`vacuum analyze ${table}`);
    }
    await db.exec('update bench_dataset set sealed = true');
    log(`    sealed ${sealed.toLocaleString('en')} rows into the audit chain in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await db.close();
  }
}
