// A service of a scenario's own, on a fresh store that the scenario fills first (bulk data goes
// straight into the database while no service holds it: an embedded folder takes one process).
// On PostgreSQL it may start several instances on the one database, as behind a load balancer.
import { join } from 'node:path';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import type { Context } from '../types.js';
import { createBenchDatabases } from './pg.js';
import { settle, stop, type Child } from './proc.js';
import { freshDataDir, startService } from './service.js';

/** Where a service keeps its data: a DATA_DIR and, on PostgreSQL, its two databases. */
export interface Store {
  dataDir: string;
  productionUrl?: string;
  demoUrl?: string;
}

/** A fresh DATA_DIR, and on PostgreSQL (`pg`, the --pg server) two fresh databases, dropped at the end. */
export async function freshStore(pg: string | null): Promise<Store> {
  return { dataDir: freshDataDir(), ...(pg ? await createBenchDatabases(pg) : {}) };
}

/** The store's production database, straight through the driver. */
export async function openStore(store: Store): Promise<Db> {
  return store.productionUrl ? openPostgres({ connectionString: store.productionUrl }) : openPglite({ dataDir: join(store.dataDir, 'production') });
}

/** Migrates the store and runs `fill` on it while no service holds it. */
export async function fillStore(store: Store, fill: (db: Db) => Promise<unknown> = async () => undefined): Promise<void> {
  const db = await openStore(store);
  try {
    await migrate(db);
    await fill(db);
  } finally {
    await db.close();
  }
}

export interface OwnService {
  url: string;
  /** The production database's URL (PostgreSQL runs only). */
  databaseUrl: string | undefined;
  /** Every instance, the first at `url`. */
  instances: Child[];
}

export interface InstanceOptions {
  /** How many instances (default 1); more than one needs PostgreSQL. */
  count?: number;
  /** What the run log calls them (default "own service"). */
  name?: string;
  /** More environment, on top of the fake chat platform's OAuth. */
  env?: Record<string, string>;
}

/** Instances of the service on `store` for `run`, idle before it starts and stopped after it. */
export async function withInstances<T>(ctx: Context, store: Store, run: (service: OwnService) => Promise<T>, options: InstanceOptions = {}): Promise<T> {
  const count = options.count ?? 1;
  const name = options.name ?? 'own service';
  const children: Child[] = [];
  try {
    // One after another: each instance runs the migrations at boot, and they need not race.
    for (let i = 0; i < count; i++) {
      const { child, readyMs } = await startService({ ...store, dataDir: i === 0 ? store.dataDir : freshDataDir(), chat: true, extraEnv: options.env });
      children.push(child);
      ctx.log(`    ${name}${count > 1 ? ` ${i + 1} of ${count}` : ''} ready in ${readyMs.toFixed(0)} ms`);
    }
    for (const child of children) await settle(child);
    return await run({ url: children[0]!.url, databaseUrl: store.productionUrl, instances: children });
  } finally {
    for (const child of children) await stop(child);
  }
}

export interface OwnServiceOptions {
  /** Fills the fresh store, migrated, before the service starts. */
  prepare?: (db: Db) => Promise<unknown>;
  env?: Record<string, string>;
  /** More than one needs PostgreSQL: an embedded folder takes one process. */
  instances?: number;
}

export async function withOwnService<T>(ctx: Context, run: (service: OwnService) => Promise<T>, options: OwnServiceOptions = {}): Promise<T> {
  const count = options.instances ?? 1;
  if (count > 1 && !ctx.options.pg) throw new Error('several instances need PostgreSQL: an embedded folder takes one process');
  const store = await freshStore(ctx.options.pg);
  await fillStore(store, options.prepare);
  return withInstances(ctx, store, run, { count, env: options.env });
}
