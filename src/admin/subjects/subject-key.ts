// The key of an environment's pseudonyms (issue 32): its own secret in signing_keys, created once
// and kept with the data (a restored backup erases to the same pseudonyms), derived for this one
// purpose. The same chat id always gets the same pseudonym in one environment, never across two.
import { pseudonymKey } from '../../platform/audit-chain/personal-fields.js';
import { signingKey } from '../../platform/auth/signing-keys.js';
import type { Queryable } from '../../platform/db/types.js';

/** Read before the erasure's transaction: the first call may create the key. */
export async function subjectPseudonymKey(db: Queryable): Promise<Buffer> {
  return pseudonymKey((await signingKey(db, 'subject_pseudonym')).toString('base64url'));
}
