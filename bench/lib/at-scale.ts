// The at-scale store: 1,000,000 reports and 1,000,000 events on PostgreSQL (100,000 each on PGlite),
// generated once per run and shared by the scenarios that read it, each of which then starts a
// service of its own on it (after its own additions: a store is written while no service holds
// it, since an embedded folder takes one process). Generating takes minutes; sharing it lets
// several at-scale scenarios run in one go without paying that again.
import type { Db } from '../../src/platform/db/types.js';
import type { Context } from '../types.js';
import { generateReportsAndEvents } from './generate-data.js';
import { fillStore, freshStore, withInstances, type OwnService, type Store } from './own-service.js';

let shared: Promise<Store & { rows: number }> | undefined;

async function generate(ctx: Context): Promise<Store & { rows: number }> {
  const rows = ctx.store === 'postgres' ? 1_000_000 : 100_000;
  const store = await freshStore(ctx.options.pg);
  const started = Date.now();
  await fillStore(store, (db) => generateReportsAndEvents(db, { reports: rows, events: rows }));
  ctx.log(`    generated ${rows.toLocaleString('en')} reports and ${rows.toLocaleString('en')} events in ${((Date.now() - started) / 1000).toFixed(0)} s (shared by the at-scale scenarios of this run)`);
  return { ...store, rows };
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
  // Migrating again is a no-op unless the shared store predates a migration of this build.
  await fillStore(store, (db) => prepare(db, store.rows));
  return withInstances(ctx, store, (service) => run(service, store.rows), { env: options.env });
}
