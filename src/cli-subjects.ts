// `npm run cli -- subject-export --env <env> --chat-id <id> --out <file>` and `subject-erase --env
// <env> --chat-id <id> --reason <r> --reference <ref>` (issue 32): what GET /admin/subjects/<id>
// and POST /admin/subjects/<id>/erase do, for an operator, recorded as actor_kind 'operator'; and
// `pseudonym-key --env <env>`, the value of <ENV>_PSEUDONYM_KEY (subject-key.ts); with `--adopt`,
// the configured key becomes the environment's (its fingerprint replaces the recorded one).
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { pino } from 'pino';
import { eraseSubject } from './admin/subjects/erase.js';
import { exportSubject } from './admin/subjects/export.js';
import { configuredPseudonymKey, dropLegacyPseudonymSecret, legacyPseudonymSecret, newPseudonymSecret, recordFingerprint, subjectPseudonymKey } from './admin/subjects/subject-key.js';
import { ENV_OPTION, migrateForCommand, parseEnvironment, parseOptions, UsageError } from './cli-options.js';
import { loadConfig, type EnvironmentName } from './config.js';
import { pseudonymKey } from './platform/audit-chain/personal-fields.js';
import type { Db } from './platform/db/types.js';
import { defaultOpenDb } from './platform/environments.js';
import { AppError } from './platform/errors.js';

const OPERATOR = { kind: 'operator' } as const;

function chatIdOption(value: string | boolean | undefined): string {
  if (typeof value !== 'string' || !/^[0-9]{1,20}$/.test(value)) throw new UsageError('--chat-id is required: 1 to 20 digits');
  return value;
}

function textOption(name: string, value: string | boolean | undefined, max: number): string {
  if (typeof value !== 'string' || value.trim() === '' || [...value].length > max) throw new UsageError(`--${name} is required: 1 to ${max} characters`);
  return value;
}

async function withDb<T>(env: EnvironmentName, fn: (db: Db, key: () => Promise<Buffer>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = await defaultOpenDb(config, pino({ level: 'warn' }))(config.environments[env]);
  try {
    await migrateForCommand(db);
    return await fn(db, () => subjectPseudonymKey({ name: env, config: config.environments[env], dataDir: config.dataDir, db }));
  } finally {
    await db.close();
  }
}

async function subjectExportCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, 'chat-id': { type: 'string' }, out: { type: 'string' } });
  const env = parseEnvironment(values.env);
  const chatId = chatIdOption(values['chat-id']);
  const out = textOption('out', values.out, 4096);
  return withDb(env, async (db) => {
    const doc = await db.transaction((tx) => exportSubject(tx, chatId, OPERATOR, randomUUID()));
    await writeFile(out, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600 });
    console.log(`${env}: ${doc.total} rows about ${chatId} written to ${out} (audited as admin.subject_exported, ${doc.correlation_id})`);
    return 0;
  });
}

async function subjectEraseCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, 'chat-id': { type: 'string' }, reason: { type: 'string' }, reference: { type: 'string' } });
  const env = parseEnvironment(values.env);
  const chatId = chatIdOption(values['chat-id']);
  const reason = textOption('reason', values.reason, 500);
  const reference = textOption('reference', values.reference, 200);
  return withDb(env, async (db, pseudonymKey) => {
    try {
      const key = await pseudonymKey();
      const result = await db.transaction((tx) => eraseSubject(tx, key, { chatId, reason, reference, actor: OPERATOR, correlationId: randomUUID() }));
      const counts = Object.entries(result.counts).map(([table, n]) => `${n} ${table}`).join(', ');
      if (result.erasure_id === null) console.log(`${env}: nothing names ${chatId} any more (pseudonym ${result.pseudonym}); nothing changed`);
      else console.log(`${env}: erased ${chatId} as ${result.pseudonym} under reference ${result.reference}: ${counts} (erasure ${result.erasure_id})`);
      return 0;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      console.error(`subject-erase: ${err.message} (${err.code}); nothing was written`);
      return 1;
    }
  });
}

/**
 * `pseudonym-key --env <env>`: the line to set <ENV>_PSEUDONYM_KEY. A key an earlier release kept in
 * the database is printed and then deleted from it (pseudonyms stay what they were, and backups
 * taken from now on do not hold it); otherwise a new one. Nothing else is written.
 */
async function pseudonymKeyCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, adopt: { type: 'boolean' } });
  const env = parseEnvironment(values.env);
  if (values.adopt === true) {
    const config = loadConfig();
    return withDb(env, async (db) => {
      const key = await configuredPseudonymKey({ name: env, config: config.environments[env], dataDir: config.dataDir, db });
      const fingerprint = await recordFingerprint(db, key, true);
      // An earlier release's key, if it is still in the database, is no longer the environment's.
      await dropLegacyPseudonymSecret(db);
      console.log(`${env}: the configured pseudonym key is now the environment's (fingerprint ${fingerprint.slice(0, 16)}): people erased before keep the pseudonym they have, and one erased again gets a new one`);
      return 0;
    });
  }
  return withDb(env, async (db) => {
    const legacy = await legacyPseudonymSecret(db);
    console.log(`${env.toUpperCase()}_PSEUDONYM_KEY=${legacy ?? newPseudonymSecret()}`);
    if (legacy !== undefined) {
      // The key the pseudonyms so far were made under: an instance given another one is refused.
      await recordFingerprint(db, pseudonymKey(legacy));
      await dropLegacyPseudonymSecret(db);
      console.error(`${env}: the key an earlier release kept in the database is printed above and deleted from it: set the variable before the next erasure`);
    }
    return 0;
  });
}

export const SUBJECT_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  'pseudonym-key': pseudonymKeyCommand,
  'subject-export': subjectExportCommand,
  'subject-erase': subjectEraseCommand,
};
