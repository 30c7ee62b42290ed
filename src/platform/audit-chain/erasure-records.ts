// An erased field verifies only against its erasure's own record (issue 39, finding 5). The salts
// table is not sealed: a writer with SQL could otherwise move any field's salt to an "erased"
// entry, put a marker or pseudonym in its place, and verify-audit would report an erasure. Each
// erasure writes its admin audit row (admin.subject_erased, admin.case_erased) with the fields it
// erased in sealed rows, `after.fields` = [[table, row id, pointer, value left], ...], in the
// erasure's transaction; that row is sealed in its turn, so a forger has to add an erasure to the
// trail, in the open, rather than edit one row quietly. Erasures made before records named their
// fields are attested once by migration 0031 (admin.erasures_attested, `after.fields` =
// [[erasure id, table, row id, pointer, value], ...]).
import type { Queryable } from '../db/types.js';
import type { ErasedUse } from './forms.js';
import type { SealedTable } from './hashes.js';

export const ERASURE_RECORD_ACTIONS = ['admin.subject_erased', 'admin.case_erased'] as const;
export const ATTESTATION_ACTION = 'admin.erasures_attested';

export interface ErasureClaim {
  erasure: string;
  source: SealedTable;
  id: number;
  position: number;
  pointer: string;
  value: string;
}

const keyOf = (erasure: string, source: string, id: number, pointer: string, value: string) => JSON.stringify([erasure, source, Number(id), pointer, value]);

/** The erased fields a verification used, checked against the records once the walk is done. */
export class ErasureClaims {
  private readonly claims = new Map<string, ErasureClaim>();

  add(at: { source: SealedTable; id: number; position: number }, used: readonly ErasedUse[]): void {
    for (const u of used) this.claims.set(keyOf(u.erasure, at.source, at.id, u.pointer, u.value), { ...at, erasure: u.erasure, pointer: u.pointer, value: u.value });
  }

  /** The claim earliest in the chain that no record names, if any (read in the caller's snapshot). */
  async firstUnrecorded(db: Queryable): Promise<ErasureClaim | undefined> {
    if (this.claims.size === 0) return undefined;
    const erasures = [...new Set([...this.claims.values()].map((c) => c.erasure))];
    const { rows } = await db.query<{ action: string; after: { erasure_id?: unknown; fields?: unknown } | null }>(
      `select action, after from audit_log
        where (action = any($1::text[]) and after ->> 'erasure_id' = any($2::text[])) or action = $3::text`,
      [ERASURE_RECORD_ACTIONS, erasures, ATTESTATION_ACTION],
    );
    const recorded = new Set<string>();
    for (const { action, after } of rows) {
      if (!Array.isArray(after?.fields)) continue;
      for (const f of after.fields as unknown[][]) {
        if (!Array.isArray(f)) continue;
        const [erasure, source, id, pointer, value] = action === ATTESTATION_ACTION ? f : [after.erasure_id, ...f];
        recorded.add(keyOf(String(erasure), String(source), Number(id), String(pointer), String(value)));
      }
    }
    let first: ErasureClaim | undefined;
    for (const [key, claim] of this.claims) {
      if (!recorded.has(key) && (first === undefined || claim.position < first.position)) first = claim;
    }
    return first;
  }
}
