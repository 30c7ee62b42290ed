// An erased field verifies only against its erasure's own record (issue 39, finding 5). The salts
// table is not sealed: a writer with SQL could otherwise move any field's salt to an "erased"
// entry, put a marker or pseudonym in its place, and verify-audit would report an erasure. Each
// erasure writes its admin audit row (admin.subject_erased, admin.case_erased) with the fields it
// erased in sealed rows, `after.fields` = [[table, row id, pointer, value left], ...], in the
// erasure's transaction (migration 0031's trigger fills them in when a release before wrote none).
// A record counts when it is sealed, or waits for the sealer's next pass (written by a transaction
// that has ended: a row dated in the future, which the sealer never reaches, does not count); so a
// forger has to add an erasure to the trail, sealed at its head, rather than edit one row quietly.
// The erased entry's reference must be its record's, so the count by reference cannot be
// relabelled. Erasures made before records named their fields are attested by migration 0031: its
// admin.erasures_attested row (the first one only), `after.fields` = [[erasure id, reference,
// table, row id, pointer, value], ...].
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

const keyOf = (erasure: unknown, reference: unknown, source: unknown, id: unknown, pointer: unknown, value: unknown) =>
  JSON.stringify([String(erasure), String(reference), String(source), Number(id), String(pointer), String(value)]);

/** Records that count: sealed, or to be sealed by the next pass (their transaction has ended). */
const RECORDS_SQL = `select a.action, a.after from audit_log a
  where ((a.action = any($1::text[]) and a.after ->> 'erasure_id' = any($2::text[]))
         or a.id = (select min(x.id) from audit_log x where x.action = $3::text))
    and (exists (select 1 from audit_chain c where c.source = 'audit_log' and c.row_id = a.id)
         or a.sealing_tx < pg_snapshot_xmax(pg_current_snapshot()))`;

/**
 * The erased fields a verification used, checked against the records once the walk is done. It
 * holds one entry per erased field of the chain: memory grows with erasures, not with the chain.
 */
export class ErasureClaims {
  private readonly claims = new Map<string, ErasureClaim>();

  add(at: { source: SealedTable; id: number; position: number }, used: readonly ErasedUse[]): void {
    for (const u of used) this.claims.set(keyOf(u.erasure, u.reference, at.source, at.id, u.pointer, u.value), { ...at, erasure: u.erasure, pointer: u.pointer, value: u.value });
  }

  /** The claim earliest in the chain that no record names, if any (read in the caller's snapshot). */
  async firstUnrecorded(db: Queryable): Promise<ErasureClaim | undefined> {
    if (this.claims.size === 0) return undefined;
    const erasures = [...new Set([...this.claims.values()].map((c) => c.erasure))];
    const { rows } = await db.query<{ action: string; after: { erasure_id?: unknown; reference?: unknown; fields?: unknown } | null }>(RECORDS_SQL, [
      ERASURE_RECORD_ACTIONS, erasures, ATTESTATION_ACTION,
    ]);
    const recorded = new Set<string>();
    for (const { action, after } of rows) {
      if (!Array.isArray(after?.fields)) continue;
      for (const f of after.fields as unknown[]) {
        if (!Array.isArray(f)) continue;
        recorded.add(action === ATTESTATION_ACTION ? keyOf(...(f as [unknown, unknown, unknown, unknown, unknown, unknown])) : keyOf(after.erasure_id, after.reference, ...(f as [unknown, unknown, unknown, unknown])));
      }
    }
    let first: ErasureClaim | undefined;
    for (const [key, claim] of this.claims) {
      if (!recorded.has(key) && (first === undefined || claim.position < first.position)) first = claim;
    }
    return first;
  }
}
