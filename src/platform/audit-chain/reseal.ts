// Rows sealed in form 1 (before issue 32) sealed again in form 3 (forms.ts), by the sealer in the background:
// in each pass, after the new rows, as many as the batch's limit leaves. A form-1 row can be
// checked only whole: once one of its fields is erased its form-1 seal no longer matches, and
// verify-audit then accepts it on the strength of a later seal of the same row in a form with
// commitments (2, by the release before, or 3). A forger could append such a seal for a row they
// edited; once this pass has re-sealed every form-1 row, each row already has its later seal, and
// a checkpoint taken after the pass pins it. A row that does not match its form-1 seal is passed over (re-sealing it would launder the
// edit): verify-audit names it. So is a row an erasure has already re-sealed.
import type { Tx } from '../db/types.js';
import { chainHash, ROW_JSON, rowHash, type ChainHead, type SealedTable } from './hashes.js';
import { SEAL_FORM, sealIn, writeSalts, type Salts } from './forms.js';

/** Form-1 seals after the pass's position, with their rows and whether a later seal exists. */
const FORM1_SQL = `select c.position, c.source, c.row_id, encode(c.row_hash, 'hex') as row_hash,
    exists (select 1 from audit_chain c2 where c2.source = c.source and c2.row_id = c.row_id and c2.form <> 1) as resealed,
    case c.source
      when 'events' then (select ${ROW_JSON.events} from events r where r.id = c.row_id)
      else (select ${ROW_JSON.audit_log} from audit_log r where r.id = c.row_id)
    end as row
  from audit_chain c where c.form = 1 and c.position > $1::bigint order by c.position limit $2::int`;

/**
 * At most `limit` form-1 seals looked at, in the sealer's transaction (under its lock, read in
 * UTC); the new seals appended at `head`, which moves.
 */
export async function resealForm1(tx: Tx, head: ChainHead, limit: number): Promise<{ resealed: number }> {
  const { rows: state } = await tx.query<{ at: number }>('select form1_position as at from audit_chain_state');
  const { rows } = await tx.query<{ position: number; source: SealedTable; row_id: number; row_hash: string; resealed: boolean; row: Record<string, unknown> | null }>(
    FORM1_SQL,
    [state[0]!.at, limit],
  );
  if (rows.length === 0) return { resealed: 0 };
  const seals: { position: number; source: SealedTable; id: number; rh: string; ch: string }[] = [];
  const salted: { source: string; id: number; salts: Salts }[] = [];
  for (const r of rows) {
    if (r.resealed || r.row === null || rowHash(r.source, r.row) !== r.row_hash) continue;
    const { rh, salts } = sealIn(SEAL_FORM, r.source, r.row);
    head.rows++;
    head.hash = chainHash(head.hash, head.rows, rh);
    seals.push({ position: head.rows, source: r.source, id: Number(r.row_id), rh, ch: head.hash });
    if (Object.keys(salts).length > 0) salted.push({ source: r.source, id: Number(r.row_id), salts });
  }
  if (seals.length > 0) {
    await tx.query(
      `insert into audit_chain (position, source, row_id, row_hash, chain_hash, form)
       select p, s, i, decode(rh, 'hex'), decode(ch, 'hex'), $6::int
         from unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[]) as t(p, s, i, rh, ch)`,
      [seals.map((s) => s.position), seals.map((s) => s.source), seals.map((s) => s.id), seals.map((s) => s.rh), seals.map((s) => s.ch), SEAL_FORM],
    );
    await writeSalts(tx, salted);
  }
  await tx.query('update audit_chain_state set form1_position = $1::bigint', [rows.at(-1)!.position]);
  return { resealed: seals.length };
}
