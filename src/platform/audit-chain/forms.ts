// The chain's forms 2 and 3: a row's hash commits to each personal field through a salted
// commitment instead of the value itself, so that an erasure can remove the value and keep what
// the seal covers. Anyone can recompute them from the row and the side table audit_seal_salts.
//
// Form 3 (issue 39; what the sealer writes):
//   row_hash = SHA-256( JCS({"source": <table>, "form": 3, "row": R, "personal": P}) )
//   R        = the row with each personal string leaf (personal-fields.ts, form 3) set to null
//   P        = { <the leaf's JSON pointer>: hex(SHA-256("cms-audit-commitment-v3" || 0x00 || salt_p || UTF-8(v))) }
// P's keys are the leaves that were personal strings when sealed: anything put in a leaf's place
// (an object shaped like a commitment, null, a number) changes R or P and so the hash (finding 4).
//
// Form 2 (issue 32; rows sealed before form 3):
//   row_hash = SHA-256( JCS({"source": <table>, "form": 2, "row": F(row)}) )
//   F(row)   = the row with each personal leaf (form-2 list) replaced by {"commitment": hex(SHA-256(salt_p || UTF-8(v)))}
// F does not say which leaves were personal: a stored {"commitment": c} gives the same F. The
// service never writes an object whose one key is "commitment", so one is an edit here. (Its list
// includes staff's fields, which the release before could erase when they quoted the subject's
// name: such an erased field verifies by its attested record, like any other.)
//
// salt_p is 16 random bytes the sealer drew for p. After an erasure p has no salt: its value must
// be the erasure marker (or, under a chat-id key, a pseudonym) and the value the erasure recorded
// leaving, and the commitment is the one the erasure kept. Neither salts nor kept commitments are
// trusted: a wrong one gives a row hash that does not match the seal. That an erasure named the
// field at all is checked against the erasure's own record (verify.ts).
import { createHash, randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Tx } from '../db/types.js';
import type { SealedTable } from './hashes.js';
import { escapeToken, isErasedValue, isPersonalKey, JSON_COLUMNS, parsePointer, personalLeaves, type PersonalForm } from './personal-fields.js';

export type Form = 1 | PersonalForm;
/** The form the sealer writes, and an erasure re-seals a form-1 row in. */
export const SEAL_FORM = 3 as const;
export const SALT_BYTES = 16;
const COMMITMENT_DOMAIN = Buffer.from('cms-audit-commitment-v3\0', 'utf8');

/** Salts by JSON pointer, hex. */
export type Salts = Record<string, string>;

/**
 * A field an erasure removed: the commitment its seal holds, the erasure that removed it, and the
 * value it left (the marker or the pseudonym: another pseudonym put there later is an edit).
 */
export interface ErasedField {
  commitment: string;
  erasure: string;
  reference: string;
  value: string;
}
export type ErasedFields = Record<string, ErasedField>;

/** An erased field a row's hash used: verify-audit looks for its erasure's record. */
export interface ErasedUse {
  pointer: string;
  erasure: string;
  reference: string;
  value: string;
}

export function commitment(form: PersonalForm, saltHex: string, value: string): string {
  const h = createHash('sha256');
  if (form === 3) h.update(COMMITMENT_DOMAIN);
  return h.update(Buffer.from(saltHex, 'hex')).update(value, 'utf8').digest('hex');
}

export interface FormHash {
  /** The row hash, when every personal leaf has a salt or an acceptable erased entry. */
  hash: string | null;
  /** The first leaf that has neither (or an erased entry its value does not fit), or a forged one. */
  unaccounted: string | null;
  /** The erased entries used. */
  used: ErasedUse[];
}

/** The row's hash in a form with personal commitments: see the top of this file. */
export function rowHashIn(form: PersonalForm, source: SealedTable, row: Record<string, unknown>, salts: Salts, erased: ErasedFields): FormHash {
  const used: ErasedUse[] = [];
  if (form === 2) {
    const forged = commitmentShaped(source, row);
    if (forged !== null) return { hash: null, unaccounted: forged, used };
  }
  const commitments: Record<string, string> = {};
  for (const leaf of personalLeaves(source, row, form)) {
    const salt = salts[leaf.pointer];
    const gone = erased[leaf.pointer];
    if (typeof salt === 'string' && /^[0-9a-f]{32}$/.test(salt)) {
      commitments[leaf.pointer] = commitment(form, salt, leaf.value);
    } else if (gone !== undefined && isErasedValue(leaf.key, leaf.value) && gone.value === leaf.value && typeof gone.commitment === 'string') {
      commitments[leaf.pointer] = gone.commitment;
      used.push({ pointer: leaf.pointer, erasure: String(gone.erasure), reference: String(gone.reference), value: leaf.value });
    } else {
      return { hash: null, unaccounted: leaf.pointer, used };
    }
  }
  const shaped = structuredClone(row);
  for (const [pointer, c] of Object.entries(commitments)) setAt(shaped, parsePointer(pointer), form === 2 ? { commitment: c } : null);
  const text = canonicalize(form === 2 ? { source, form, row: shaped } : { source, form, row: shaped, personal: commitments });
  if (text === undefined) throw new Error(`${source}: a row that JSON cannot represent`);
  return { hash: createHash('sha256').update(text).digest('hex'), unaccounted: null, used };
}

/**
 * The pointer of the first object in the row's jsonb, in a personal leaf's place (under a form-2
 * personal key), whose one key is "commitment"; else null.
 */
function commitmentShaped(source: SealedTable, row: Record<string, unknown>): string | null {
  const walk = (node: unknown, pointer: string, key: string): string | null => {
    if (node === null || typeof node !== 'object') return null;
    const entries = Array.isArray(node) ? node.map((v, i) => [String(i), v] as const) : Object.entries(node);
    if (!Array.isArray(node) && isPersonalKey(key) && entries.length === 1 && entries[0]![0] === 'commitment') return pointer;
    for (const [k, v] of entries) {
      const found = walk(v, `${pointer}/${escapeToken(k)}`, Array.isArray(node) ? key : k);
      if (found !== null) return found;
    }
    return null;
  };
  for (const column of JSON_COLUMNS[source]) {
    const found = walk(row[column], `/${column}`, column);
    if (found !== null) return found;
  }
  return null;
}

/** Sets the value at a parsed JSON pointer of the row (its parents exist). */
export function setAt(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node: unknown = target;
  for (const token of path.slice(0, -1)) node = (node as Record<string, unknown>)[token];
  (node as Record<string, unknown>)[path.at(-1)!] = value;
}

/** A row's hash in `form` with fresh salts for its personal fields (the sealer's, form 3). */
export function sealIn(form: PersonalForm, source: SealedTable, row: Record<string, unknown>): { rh: string; salts: Salts } {
  const salts: Salts = {};
  for (const leaf of personalLeaves(source, row, form)) salts[leaf.pointer] = randomBytes(SALT_BYTES).toString('hex');
  return { rh: rowHashIn(form, source, row, salts, {}).hash!, salts };
}

/**
 * The salts of the seals just written, in their transaction (a row without personal fields has
 * none). A salts row already there belongs to no seal (the seal was lost with a move to another
 * server, and the row is sealed again): it is replaced, since verify-audit trusts no salt anyway.
 */
export async function writeSalts(tx: Tx, salted: { source: string; id: number; salts: Salts }[]): Promise<void> {
  if (salted.length === 0) return;
  await tx.query(
    `insert into audit_seal_salts (source, row_id, salts)
     select s, i, x from unnest($1::text[], $2::bigint[], $3::jsonb[]) as t(s, i, x)
     on conflict (source, row_id) do update set salts = excluded.salts, erased = '{}'`,
    [salted.map((r) => r.source), salted.map((r) => r.id), salted.map((r) => JSON.stringify(r.salts))],
  );
}
