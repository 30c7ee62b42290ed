// Behind a connection pooler the service cannot send its startup option `-c jit=off` (postgres.ts,
// JIT_OFF): the server's own setting for the role or database decides. Said once at boot when that
// leaves JIT on, since nothing fails meanwhile: large reads just get slower (docs/decisions.md).
import type { FastifyBaseLogger } from 'fastify';
import type { EnvironmentConfig } from '../../config.js';
import type { Db } from './types.js';

export function behindPooler(env: EnvironmentConfig): boolean {
  return env.databaseDirectUrl !== undefined && env.databaseDirectUrl !== env.databaseUrl;
}

export async function warnIfJitOn(db: Db, env: EnvironmentConfig, log: FastifyBaseLogger): Promise<void> {
  if (!behindPooler(env)) return;
  const { rows } = await db.query<{ jit: string }>(`select current_setting('jit') as jit`);
  if (rows[0]?.jit !== 'on') return;
  log.warn(
    { environment: env.name },
    `jit is on for the service's connections through the pooler: set it off on the server (alter role <user> set jit = off, or alter database <database> set jit = off; docs/postgresql.md)`,
  );
}
