// Events and admin audit rows are sealed into the audit chain: an erasure changes them only through
// the chain's primitive (src/platform/audit-chain/erase.ts), which replaces the named personal
// leaves by the marker (or, for a chat id, the pseudonym) and keeps their commitments, so
// verify-audit reports them as erased under the erasure's reference rather than as edited. The
// fields it returns go into the erasure's admin audit row: verify-audit looks for them there.
import { eraseSealedRows, personalPointers, SealMismatchError, type SealedErasure, type SealedRowsErased } from '../../platform/audit-chain/erase.js';
import type { Tx } from '../../platform/db/types.js';
import { errors } from '../../platform/errors.js';
import type { FoundRow } from './queries.js';
import { namesSubject, type Subject } from './scrub.js';

/**
 * Each person's leaves of each row, one request per person and row: a row naming two people (a
 * report's creation names its reporter and the reported) gets each one's pseudonym in their fields.
 */
export async function eraseSealed(tx: Tx, erasure: SealedErasure, rows: FoundRow[], subjects: readonly Subject[]): Promise<SealedRowsErased> {
  const targets = rows.flatMap(({ entry, row }) =>
    subjects.flatMap((subject) => {
      const source = entry.table as 'events' | 'audit_log';
      const pointers = personalPointers(source, row, (_key, value) => namesSubject(value, subject));
      return pointers.length === 0 ? [] : [{ source, id: Number(row.id), pointers, chatIdPseudonym: subject.pseudonym }];
    }),
  );
  if (targets.length === 0) return { events: 0, audit_log: 0, fields: [] };
  try {
    // A row changed for two people (two pseudonyms: two requests) counts once: those rows are
    // erased request by request; the rest, one request each, in one call.
    const perRow = new Map<string, typeof targets>();
    for (const r of targets) perRow.set(`${r.source}:${r.id}`, [...(perRow.get(`${r.source}:${r.id}`) ?? []), r]);
    const changed = await eraseSealedRows(tx, erasure, [...perRow.values()].filter((rs) => rs.length === 1).flat());
    for (const requests of [...perRow.values()].filter((rs) => rs.length > 1)) {
      let n = 0;
      for (const request of requests) {
        const one = await eraseSealedRows(tx, erasure, [request]);
        n += one.events + one.audit_log;
        changed.fields.push(...one.fields);
      }
      if (n > 0) changed[requests[0]!.source]++;
    }
    return changed;
  } catch (err) {
    // A row edited behind the service's back: erasing it would hide that. Nothing is written.
    if (err instanceof SealMismatchError) throw errors.conflict(err.message, 'AUDIT_ROW_TAMPERED');
    throw err;
  }
}
