// The key of an environment's pseudonyms (issue 32), kept out of the database and its backups
// (issue 39, finding 9): whoever holds a backup could otherwise compute the pseudonym of any chat
// id they guess and find the erased person's rows. The same chat id always gets the same pseudonym
// under one key, in one environment, never across two.
//   - <ENV>_PSEUDONYM_KEY when set (any secret of 32 characters or more);
//   - embedded, without it: a key generated once into a file beside the data folder, not inside it
//     (DATA_DIR/<env>.pseudonym-key, mode 0600), so a backup of the folder does not hold it; with
//     DATA_DIR=:memory:, one per process, as the data is;
//   - on PostgreSQL without it: the erasure answers 503 NOT_CONFIGURED.
// A key an earlier release kept in signing_keys moves out at its first use on the embedded store
// (into the file, the row deleted); on PostgreSQL `npm run cli -- pseudonym-key` prints it for the
// variable and deletes the row (cli-subjects.ts), so pseudonyms stay what they were.
// Every instance of an environment must use the same key: the database keeps the key's fingerprint
// from the first erasure on, and an instance whose key does not match is refused (503
// PSEUDONYM_KEY_MISMATCH) rather than give the same person a second pseudonym.
import { createHmac, randomBytes } from 'node:crypto';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EnvironmentConfig, EnvironmentName } from '../../config.js';
import { SECRET_MIN_LENGTH } from '../../config/secrets.js';
import { pseudonymKey } from '../../platform/audit-chain/personal-fields.js';
import type { Queryable } from '../../platform/db/types.js';
import type { Environment } from '../../platform/environments.js';
import { AppError, errors } from '../../platform/errors.js';

/** Where an environment's key comes from. */
export interface PseudonymKeySource {
  name: EnvironmentName;
  config: Pick<EnvironmentConfig, 'pseudonymKey' | 'databaseUrl'>;
  /** DATA_DIR: the embedded store's folders, and the key files beside them. */
  dataDir: string;
  db: Queryable;
}

/** The purpose under which earlier releases kept the key in signing_keys. */
const LEGACY_PURPOSE = 'subject_pseudonym';
const inMemory = new Map<EnvironmentName, string>();

export const pseudonymKeyFile = (dataDir: string, name: EnvironmentName) => join(dataDir, `${name}.pseudonym-key`);

/** The secret an earlier release kept in the database, if it is still there. */
export async function legacyPseudonymSecret(db: Queryable): Promise<string | undefined> {
  const { rows } = await db.query<{ secret: string }>('select secret from signing_keys where purpose = $1::text', [LEGACY_PURPOSE]);
  return rows[0]?.secret;
}

export const dropLegacyPseudonymSecret = (db: Queryable) => db.query('delete from signing_keys where purpose = $1::text', [LEGACY_PURPOSE]);

/** A new secret for <ENV>_PSEUDONYM_KEY or the key file. */
export const newPseudonymSecret = () => randomBytes(32).toString('base64url');

/** The file's key; an empty or short one (a truncated copy) is refused, never used as a weak key. */
async function readKeyFile(file: string): Promise<string | undefined> {
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  if (text === undefined) return undefined;
  const secret = text.trim();
  if (secret.length < SECRET_MIN_LENGTH) {
    throw new AppError(503, `${file} holds no usable pseudonym key (fewer than ${SECRET_MIN_LENGTH} characters): restore it from where you keep your secrets, or set the environment's _PSEUDONYM_KEY`, 'NOT_CONFIGURED');
  }
  return secret;
}

/**
 * Creates the key file whole or not at all: written under a name of its own, then linked to its
 * place, which fails when another process linked first; whoever comes second reads the winner's.
 */
async function createKeyFile(file: string, secret: string): Promise<string> {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(temporary, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(temporary, file);
    return secret;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return (await readKeyFile(file))!;
  } finally {
    await unlink(temporary);
  }
}

/** The embedded store's secret: the file's, else the database's moved into it, else a new one. */
async function embeddedSecret(source: PseudonymKeySource): Promise<string> {
  if (source.dataDir === ':memory:') {
    const secret = inMemory.get(source.name) ?? (await legacyPseudonymSecret(source.db)) ?? newPseudonymSecret();
    inMemory.set(source.name, secret);
    return secret;
  }
  const file = pseudonymKeyFile(source.dataDir, source.name);
  const existing = await readKeyFile(file);
  if (existing !== undefined) return existing;
  const secret = await createKeyFile(file, (await legacyPseudonymSecret(source.db)) ?? newPseudonymSecret());
  await dropLegacyPseudonymSecret(source.db);
  return secret;
}

/** The key's fingerprint: an HMAC of a constant, which tells nothing of the key or of any chat id. */
export const keyFingerprint = (key: Buffer) => createHmac('sha256', key).update('pseudonym-key-fingerprint').digest('hex');

/** The configured key, without comparing it with the database's fingerprint. */
export async function configuredPseudonymKey(source: PseudonymKeySource): Promise<Buffer> {
  if (source.config.pseudonymKey !== undefined) {
    // A key an earlier release kept in the database made the pseudonyms so far: its fingerprint is
    // recorded first, so that a different configured key is refused rather than silently adopted
    // (issue 39, review). The same key goes from the database, so that backups taken from now on
    // do not hold it; a different one stays until the operator settles which key is theirs.
    const configured = pseudonymKey(source.config.pseudonymKey);
    const legacy = await legacyPseudonymSecret(source.db);
    if (legacy !== undefined) {
      await recordFingerprint(source.db, pseudonymKey(legacy));
      if (pseudonymKey(legacy).equals(configured)) await dropLegacyPseudonymSecret(source.db);
    }
    return configured;
  }
  if (source.config.databaseUrl !== undefined) throw errors.notConfigured(`${source.name.toUpperCase()}_PSEUDONYM_KEY`);
  return pseudonymKey(await embeddedSecret(source));
}

/**
 * Records the key's fingerprint when none is, or replaces it (`adopt`); returns the one recorded.
 * Otherwise the row is only read: every erasure asks, and none of them rewrites it.
 */
export async function recordFingerprint(db: Queryable, key: Buffer, adopt = false): Promise<string> {
  const { rows } = await db.query<{ fingerprint: string }>(
    adopt
      ? `insert into pseudonym_key_fingerprint (fingerprint) values ($1::text)
         on conflict (singleton) do update set fingerprint = excluded.fingerprint, created_at = now() returning fingerprint`
      : `with added as (insert into pseudonym_key_fingerprint (fingerprint) values ($1::text) on conflict (singleton) do nothing returning fingerprint)
         select fingerprint from added union all select fingerprint from pseudonym_key_fingerprint`,
    [keyFingerprint(key)],
  );
  if (rows[0]) return rows[0].fingerprint;
  // Another instance's first insert committed while this statement waited on it: its snapshot,
  // taken before, cannot see the row; the next statement's does.
  const { rows: recorded } = await db.query<{ fingerprint: string }>('select fingerprint from pseudonym_key_fingerprint');
  return recorded[0]!.fingerprint;
}

/** The environment's pseudonym key, the one its earlier erasures used; read before the erasure's transaction. */
export async function subjectPseudonymKey(source: PseudonymKeySource): Promise<Buffer> {
  const key = await configuredPseudonymKey(source);
  if ((await recordFingerprint(source.db, key)) !== keyFingerprint(key)) {
    throw new AppError(
      503,
      `This instance's pseudonym key is not the one ${source.name}'s earlier erasures used: its people would get a second pseudonym. ` +
        `Give every instance the same ${source.name.toUpperCase()}_PSEUDONYM_KEY (or, embedded, the same key file; npm run cli -- pseudonym-key --env ${source.name} prints a key an earlier release kept in the database); ` +
        `to change the key on purpose: npm run cli -- pseudonym-key --env ${source.name} --adopt`,
      'PSEUDONYM_KEY_MISMATCH',
    );
  }
  return key;
}

/** The key of a running environment. */
export const environmentPseudonymKey = (env: Environment) => subjectPseudonymKey({ name: env.name, config: env.config, dataDir: env.dataDir, db: env.db });
