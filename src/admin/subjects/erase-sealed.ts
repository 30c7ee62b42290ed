// Events and admin audit rows are sealed into the audit chain: an erasure changes them only through
// the chain's primitive (src/platform/audit-chain/erase.ts), which replaces the named personal
// leaves by the marker (or, for a chat id, the pseudonym) and keeps their commitments, so
// verify-audit reports them as erased under the erasure's reference rather than as edited.
import { eraseSealedRows, personalPointers, SealMismatchError, type SealedErasure } from '../../platform/audit-chain/erase.js';
import type { Tx } from '../../platform/db/types.js';
import { errors } from '../../platform/errors.js';
import type { FoundRow } from './queries.js';
import { namesSubject, type Subject } from './scrub.js';

export async function eraseSealed(tx: Tx, erasure: SealedErasure, rows: FoundRow[], subject: Subject): Promise<{ events: number; audit_log: number }> {
  const targets = rows.flatMap(({ entry, row }) => {
    const source = entry.table as 'events' | 'audit_log';
    const pointers = personalPointers(source, row, (_key, value) => namesSubject(value, subject));
    return pointers.length === 0 ? [] : [{ source, id: Number(row.id), pointers, chatIdPseudonym: subject.pseudonym }];
  });
  if (targets.length === 0) return { events: 0, audit_log: 0 };
  try {
    return await eraseSealedRows(tx, erasure, targets);
  } catch (err) {
    // A row edited behind the service's back: erasing it would hide that. Nothing is written.
    if (err instanceof SealMismatchError) throw errors.conflict(err.message, 'AUDIT_ROW_TAMPERED');
    throw err;
  }
}
