// A service of a scenario's own, on a fresh store that the scenario fills first (bulk data goes
// straight into the database while no service holds it: an embedded folder takes one process).
// On PostgreSQL it may start several instances on the one database, as behind a load balancer.
import { join } from 'node:path';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import type { Context } from '../types.js';
import { startFakeChat } from './fake-chat.js';
import { countAsOurs } from './machine.js';
import { createBenchDatabases } from './pg.js';
import { settle, stop, type Child } from './proc.js';
import { freshDataDir, startService } from './service.js';

export interface OwnService {
  url: string;
  /** The production database's URL (PostgreSQL runs only). */
  databaseUrl: string | undefined;
  /** Every instance, the first at `url`. */
  instances: Child[];
}

export async function withOwnService<T>(
  ctx: Context,
  prepare: (db: Db) => Promise<void>,
  run: (service: OwnService) => Promise<T>,
  extraEnv: Record<string, string> = {},
  instances = 1,
): Promise<T> {
  if (instances > 1 && !ctx.options.pg) throw new Error('several instances need PostgreSQL: an embedded folder takes one process');
  const dataDir = freshDataDir();
  const dbs = ctx.options.pg ? await createBenchDatabases(ctx.options.pg) : undefined;
  if (dbs) countAsOurs('postgres'); // the server's work is part of the run, not outside load
  const db = dbs ? openPostgres({ connectionString: dbs.productionUrl }) : await openPglite({ dataDir: join(dataDir, 'production') });
  try {
    await migrate(db);
    await prepare(db);
  } finally {
    await db.close();
  }
  const chat = await startFakeChat();
  const children: Child[] = [];
  try {
    // One after another: each instance runs the migrations at boot, and they need not race.
    for (let i = 0; i < instances; i++) {
      const { child, readyMs } = await startService({ dataDir: i === 0 ? dataDir : freshDataDir(), ...(dbs ?? {}), extraEnv: { ...chat.env, ...extraEnv } });
      children.push(child);
      ctx.log(`    own service${instances > 1 ? ` ${i + 1} of ${instances}` : ''} ready in ${readyMs.toFixed(0)} ms`);
    }
    for (const child of children) await settle(child);
    return await run({ url: children[0]!.url, databaseUrl: dbs?.productionUrl, instances: children });
  } finally {
    for (const child of children) await stop(child);
  }
}
