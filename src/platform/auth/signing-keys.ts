// Secrets this service generates for itself, one per purpose and environment (table signing_keys):
// nothing new to configure, the same key on every instance of a database, and a key that never
// leaves it. The first instance that needs one creates it; every instance then keeps it in memory.
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/types.js';

/**
 * oauth_state signs sign-in state cookies. (Earlier releases kept the pseudonym key here too, as
 * subject_pseudonym: it is kept out of the database now, admin/subjects/subject-key.ts.)
 */
export type KeyPurpose = 'oauth_state';

const cache = new WeakMap<Queryable, Map<KeyPurpose, Promise<Buffer>>>();

/** The environment's key for `purpose` (32 random bytes), created once in its database. */
export function signingKey(db: Queryable, purpose: KeyPurpose): Promise<Buffer> {
  const keys = cache.get(db) ?? new Map<KeyPurpose, Promise<Buffer>>();
  cache.set(db, keys);
  let key = keys.get(purpose);
  if (!key) {
    key = loadOrCreate(db, purpose);
    keys.set(purpose, key);
    // A failure (the database unreachable) is not kept: the next caller tries again.
    key.catch(() => keys.delete(purpose));
  }
  return key;
}

async function loadOrCreate(db: Queryable, purpose: KeyPurpose): Promise<Buffer> {
  const read = async () =>
    (await db.query<{ secret: string }>('select secret from signing_keys where purpose = $1::text', [purpose])).rows[0]?.secret;
  let secret = await read();
  if (secret === undefined) {
    // Two instances starting together: one insert wins, both then read the winner's key.
    await db.query('insert into signing_keys (purpose, secret) values ($1::text, $2::text) on conflict (purpose) do nothing', [purpose, randomBytes(32).toString('base64url')]);
    secret = await read();
  }
  if (secret === undefined) throw new Error(`signing key ${purpose} could not be created`);
  return Buffer.from(secret, 'base64url');
}
