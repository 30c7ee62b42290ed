// The CLI's argument parsing, shared by its command modules (src/cli.ts, src/cli-backup.ts).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ENVIRONMENTS, type EnvironmentName } from './config.js';
import { migrate } from './platform/db/migrate.js';
import type { Db } from './platform/db/types.js';

/** A command line that cannot be run as given: exit code 2 with the usage. */
export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;
export const ENV_OPTION: Options = { env: { type: 'string' } };

export function parseOptions(args: string[], options: Options): Record<string, string | boolean | undefined> {
  try {
    return parseArgs({ args, options, allowPositionals: false, strict: true }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function parseEnvironment(value: string | boolean | undefined): EnvironmentName {
  if (value === undefined || typeof value !== 'string') throw new UsageError(`--env is required: one of ${ENVIRONMENTS.join(', ')}`);
  if (!(ENVIRONMENTS as readonly string[]).includes(value)) throw new UsageError(`--env must be one of ${ENVIRONMENTS.join(', ')} (got "${value}")`);
  return value as EnvironmentName;
}

/**
 * A command's migrations on one session of its own, a wait for another session's migration said
 * on stderr (an operator's command stuck behind a build is otherwise silent).
 */
export const migrateForCommand = (db: Db): Promise<number[]> => db.direct((session) => migrate(session, undefined, { log: STDERR_LOG }));

/** What a command says of a wait on stderr: the message alone. */
export const STDERR_LOG = { warn: (_details: object, message: string) => console.error(message) };
