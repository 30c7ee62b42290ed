// The at-scale store: 1,000,000 reports and 1,000,000 events on PostgreSQL (100,000 each on PGlite),
// generated once per run and shared by the scenarios that read it, each of which then starts a
// service of its own on it (after its own additions: a store is written while no service holds
// it, since an embedded folder takes one process). Generating takes minutes; sharing it lets
// several at-scale scenarios run in one go without paying that again.
import { join } from 'node:path';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import type { Context } from '../types.js';
import { startFakeChat } from './fake-chat.js';
import { generateReportsAndEvents } from './generate-data.js';
import { countAsOurs } from './machine.js';
import type { OwnService } from './own-service.js';
import { createBenchDatabases, type BenchDatabases } from './pg.js';
import { settle, stop } from './proc.js';
import { freshDataDir, startService } from './service.js';

interface AtScaleStore {
  dataDir: string;
  dbs: BenchDatabases | undefined;
  rows: number;
}

let shared: Promise<AtScaleStore> | undefined;

const open = (store: AtScaleStore): Promise<Db> | Db =>
  store.dbs ? openPostgres({ connectionString: store.dbs.productionUrl }) : openPglite({ dataDir: join(store.dataDir, 'production') });

async function generate(ctx: Context): Promise<AtScaleStore> {
  const rows = ctx.store === 'postgres' ? 1_000_000 : 100_000;
  const dbs = ctx.options.pg ? await createBenchDatabases(ctx.options.pg) : undefined;
  if (dbs) countAsOurs('postgres'); // the server's work is part of the run, not outside load
  const store = { dataDir: freshDataDir(), dbs, rows };
  const started = Date.now();
  const db = await open(store);
  try {
    await migrate(db);
    await generateReportsAndEvents(db, { reports: rows, events: rows });
  } finally {
    await db.close();
  }
  ctx.log(`    generated ${rows.toLocaleString('en')} reports and ${rows.toLocaleString('en')} events in ${((Date.now() - started) / 1000).toFixed(0)} s (shared by the at-scale scenarios of this run)`);
  return store;
}

/** Extra service environment (e.g. realtime configured) on top of the fake chat platform's OAuth. */
export interface AtScaleOptions {
  env?: Record<string, string>;
}

/**
 * Runs `prepare` on the shared at-scale store (generated on first use), then a service of the
 * scenario's own on it for `run`. `rows` is how many reports (and events) the store holds.
 */
export async function withAtScaleService<T>(
  ctx: Context,
  prepare: (db: Db, rows: number) => Promise<void>,
  run: (service: OwnService, rows: number) => Promise<T>,
  options: AtScaleOptions = {},
): Promise<T> {
  shared ??= generate(ctx);
  const store = await shared;
  const db = await open(store);
  try {
    await migrate(db); // a no-op unless the shared store predates a migration of this build
    await prepare(db, store.rows);
  } finally {
    await db.close();
  }
  const chat = await startFakeChat();
  const { child, readyMs } = await startService({ dataDir: store.dataDir, ...(store.dbs ?? {}), extraEnv: { ...chat.env, ...options.env } });
  ctx.log(`    own service ready in ${readyMs.toFixed(0)} ms`);
  try {
    await settle(child);
    return await run({ url: child.url, databaseUrl: store.dbs?.productionUrl, instances: [child] }, store.rows);
  } finally {
    await stop(child);
  }
}
