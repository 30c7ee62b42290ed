// The chain's form 2 (issue 32): a row's hash commits to each personal field through a salted
// commitment instead of the value itself, so that an erasure can remove the value and keep what
// the seal covers. Anyone can recompute it from the row and the side table audit_seal_salts:
//
//   row_hash   = SHA-256( JCS({"source": <table>, "form": 2, "row": F(row)}) )
//   F(row)     = the row with each personal string leaf v at JSON pointer p (personal-fields.ts)
//                replaced by {"commitment": hex(SHA-256(salt_p || UTF-8(v)))}
//
// salt_p is 16 random bytes the sealer drew for p at seal time. After an erasure p has no salt:
// its value must then be the erasure marker (or, under a chat-id key, a pseudonym) and the value
// the erasure recorded leaving, and F puts the commitment the erasure kept. Neither salts nor kept
// commitments are trusted: a wrong one gives a row hash that does not match the seal.
import { createHash, randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Tx } from '../db/types.js';
import type { SealedTable } from './hashes.js';
import { isErasedValue, parsePointer, personalLeaves } from './personal-fields.js';

export const SALT_BYTES = 16;

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

export function commitment(saltHex: string, value: string): string {
  return createHash('sha256').update(Buffer.from(saltHex, 'hex')).update(value, 'utf8').digest('hex');
}

/** Fresh salts for every personal leaf of a row, at seal time. */
export function newSalts(source: SealedTable, row: Record<string, unknown>): Salts {
  const salts: Salts = {};
  for (const leaf of personalLeaves(source, row)) salts[leaf.pointer] = randomBytes(SALT_BYTES).toString('hex');
  return salts;
}

export interface Form2Row {
  /** F(row), when every personal leaf has a salt or an acceptable erased entry. */
  committed: Record<string, unknown> | null;
  /** The first leaf that has neither (or an erased entry its value does not fit). */
  unaccounted: string | null;
  /** The references of the erased leaves that were used. */
  references: Set<string>;
}

/** F(row): see the top of this file. */
export function commitRow(source: SealedTable, row: Record<string, unknown>, salts: Salts, erased: ErasedFields): Form2Row {
  const committed = structuredClone(row);
  const references = new Set<string>();
  for (const leaf of personalLeaves(source, row)) {
    const salt = salts[leaf.pointer];
    const gone = erased[leaf.pointer];
    let c: string;
    if (typeof salt === 'string' && /^[0-9a-f]{32}$/.test(salt)) {
      c = commitment(salt, leaf.value);
    } else if (gone !== undefined && isErasedValue(leaf.key, leaf.value) && gone.value === leaf.value && typeof gone.commitment === 'string') {
      c = gone.commitment;
      references.add(String(gone.reference));
    } else {
      return { committed: null, unaccounted: leaf.pointer, references };
    }
    setAt(committed, parsePointer(leaf.pointer), { commitment: c });
  }
  return { committed, unaccounted: null, references };
}

export function form2Hash(source: SealedTable, committed: unknown): string {
  const text = canonicalize({ source, form: 2, row: committed });
  if (text === undefined) throw new Error(`${source}: a row that JSON cannot represent`);
  return createHash('sha256').update(text).digest('hex');
}

/** The form-2 row hash, or null when a personal leaf is unaccounted for (the row was edited). */
export function rowHash2(source: SealedTable, row: Record<string, unknown>, salts: Salts, erased: ErasedFields): { hash: string | null; unaccounted: string | null; references: Set<string> } {
  const f = commitRow(source, row, salts, erased);
  return { hash: f.committed === null ? null : form2Hash(source, f.committed), unaccounted: f.unaccounted, references: f.references };
}

function setAt(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node: unknown = target;
  for (const token of path.slice(0, -1)) node = (node as Record<string, unknown>)[token];
  (node as Record<string, unknown>)[path.at(-1)!] = value;
}

/** A row's form-2 hash with fresh salts for its personal fields. */
export function sealForm2(source: SealedTable, row: Record<string, unknown>): { rh: string; salts: Salts } {
  const salts = newSalts(source, row);
  const { committed } = commitRow(source, row, salts, {});
  return { rh: form2Hash(source, committed!), salts };
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
