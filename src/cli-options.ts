// The CLI's argument parsing, shared by its command modules (src/cli.ts, src/cli-backup.ts).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ENVIRONMENTS, type EnvironmentName } from './config.js';

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
