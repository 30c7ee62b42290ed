// `npm run cli -- verify-audit --env <env> [--against <head hash>]` (issue 21): exit 0 with the
// number of sealed rows and the head hash, or 1 naming the first row that does not match. Each run
// is recorded for GET /admin/health (the audit section). Rows whose personal fields were erased
// (issue 32) verify, and are counted by the erasure's reference.
import { pino } from 'pino';
import { describeProblem, recordVerification, verifyChain } from './platform/audit-chain/verify.js';
import { ENV_OPTION, parseEnvironment, parseOptions, STDERR_LOG, UsageError } from './cli-options.js';
import { loadConfig, type EnvironmentName } from './config.js';
import { DataFolderLockedError } from './platform/db/lock-file.js';
import { migrate } from './platform/db/migrate.js';
import type { Db } from './platform/db/types.js';
import { defaultOpenDb } from './platform/environments.js';

async function verifyAuditCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, against: { type: 'string' } });
  const env = parseEnvironment(values.env);
  const against = values.against as string | undefined;
  if (against !== undefined && !/^[0-9a-fA-F]{64}$/.test(against)) throw new UsageError('--against takes a head hash: 64 hexadecimal digits, as the audit checkpoint logs it');

  const config = loadConfig();
  let db: Db;
  try {
    db = await defaultOpenDb(config, pino({ level: 'warn' }))(config.environments[env]);
  } catch (err) {
    if (!(err instanceof DataFolderLockedError)) throw err;
    console.error(`verify-audit: ${err.message}`);
    console.error('The running service holds the embedded folder: stop it first, or verify a copy restored from a backup (docs/operations.md).');
    return 1;
  }
  try {
    // PostgreSQL itself, not a pooler: one repeatable-read walk of the whole chain (src/platform/audit-chain/verify.ts).
    return await db.direct((direct) => verifyOn(direct, env, against));
  } finally {
    await db.close();
  }
}

async function verifyOn(db: Db, env: EnvironmentName, against: string | undefined): Promise<number> {
  await migrate(db, undefined, { log: STDERR_LOG });
  const v = await verifyChain(db, { against });
  await recordVerification(db, v, against);
  const took = `${v.seconds.toFixed(1)} s`;
  if (!v.ok) {
    console.error(`${env}: audit chain does NOT verify: ${describeProblem(v.problem!)}`);
    console.error(`${env}: the ${v.rows} seals before it verify, ending in ${v.head} (${took})`);
    return 1;
  }
  console.log(`${env}: audit chain verifies: ${v.rows} rows, head ${v.head} (${took})`);
  for (const e of v.erased) console.log(`${env}: ${e.rows} ${e.rows === 1 ? 'row' : 'rows'} erased under reference ${e.reference}`);
  if (v.checkpointAt !== null) console.log(`${env}: extends checkpoint ${against!.toLowerCase()} (at ${v.checkpointAt} rows)`);
  if (v.pending > 0) console.log(`${env}: ${v.pending} newer rows are not sealed yet (the running service seals them within seconds)`);
  return 0;
}

export const AUDIT_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  'verify-audit': verifyAuditCommand,
};
