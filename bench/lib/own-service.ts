// A service of a scenario's own, on a fresh store that the scenario fills first (bulk data goes
// straight into the database while no service holds it: an embedded folder takes one process).
import { join } from 'node:path';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import type { Context } from '../types.js';
import { startFakeChat } from './fake-chat.js';
import { countAsOurs } from './machine.js';
import { createBenchDatabases } from './pg.js';
import { settle, stop } from './proc.js';
import { freshDataDir, startService } from './service.js';

export interface OwnService {
  url: string;
  /** The production database's URL (PostgreSQL runs only). */
  databaseUrl: string | undefined;
}

export async function withOwnService<T>(
  ctx: Context,
  prepare: (db: Db) => Promise<void>,
  run: (service: OwnService) => Promise<T>,
  extraEnv: Record<string, string> = {},
): Promise<T> {
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
  const { child, readyMs } = await startService({ dataDir, ...(dbs ?? {}), extraEnv: { ...chat.env, ...extraEnv } });
  ctx.log(`    own service ready in ${readyMs.toFixed(0)} ms`);
  try {
    await settle(child);
    return await run({ url: child.url, databaseUrl: dbs?.productionUrl });
  } finally {
    await stop(child);
  }
}
