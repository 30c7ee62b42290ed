// A service instance on the failover pair (test/helpers/failover.ts), for the slow fault tests:
// its database on the pair's primary, the multi-host URL, a promotion as a failover manager does
// it, and the cleanup that makes the pair whole again for the next file and run.
import { performance } from 'node:perf_hooks';
import { ctl, multiHostUrl, port, primaryIndex, repairPair, sql, urlAt } from './failover.js';
import { SECRETS } from './realtime.js';
import { answering, freePort, startService, type Service } from './service-process.js';

export const PAIR_KEY = 'frozen-production-key-000000000000';

/**
 * A database on the pair's primary and a service instance on it (through the multi-host URL).
 * `beforeStart` runs once the database exists and before the service starts (a replica of it).
 */
export async function serviceOnPair(
  database: string,
  env: Record<string, string> = {},
  beforeStart?: (primaryPort: number) => Promise<void>,
): Promise<{ service: Service; oldPrimary: number }> {
  await repairPair();
  const oldPrimary = (await primaryIndex())!;
  await sql(urlAt(port(oldPrimary)), `create database ${database}`);
  await beforeStart?.(port(oldPrimary));
  const service = startService({
    PRODUCTION_DATABASE_URL: multiHostUrl(database),
    PRODUCTION_API_KEY: PAIR_KEY,
    DEMO_API_KEY: `${PAIR_KEY}-demo`,
    ...SECRETS,
    DATABASE_POOL_SIZE: '4',
    LOG_LEVEL: 'warn',
    DATA_DIR: ':memory:',
    PORT: String(await freePort()),
    ...env,
  });
  await answering(service);
  return { service, oldPrimary };
}

/** Promotes the standby of the pair and lets it commit alone (a failover manager's two steps). */
export async function promote(standby: number): Promise<number> {
  await ctl(standby, 'promote');
  const promoted = performance.now();
  await sql(urlAt(port(standby)), "alter system set synchronous_standby_names = ''");
  await sql(urlAt(port(standby)), 'select pg_reload_conf()');
  return promoted;
}

/** The service stopped, its database dropped, and the old primary made the new one's standby. */
export async function cleanUp(service: Service | undefined, database: string): Promise<void> {
  service?.child.kill('SIGKILL');
  await service?.exited;
  const primary = await primaryIndex();
  if (primary !== undefined) await sql(urlAt(port(primary)), `drop database if exists ${database} with (force)`).catch(() => undefined);
  // A new base backup where need be: CI can run this again.
  await repairPair();
}
