// Erasing personal fields of sealed rows (issues 32 and 39): the one primitive subject erasure and
// retention call for events and audit_log, in the caller's transaction. Each named field (a JSON
// pointer into the row as sealed, personal-fields.ts; never a staff one) becomes the erasure
// marker, or the person's pseudonym under a chat-id key; a sealed row keeps verifying because its
// seal holds a commitment of the field, which the erasure keeps in audit_seal_salts.erased while
// it deletes the salt (forms.ts). The caller writes the erasure's record with the `fields` this
// returns: verify-audit accepts an erased field only when its erasure's record names it.
//
// Before anything is changed each sealed row is checked against its seal, and the erasure refuses
// a row that does not match: erasing it would hide the tampering. A row sealed in form 1 (before
// issue 32) is sealed again in form 3 first, a new seal at the chain's head; verify-audit then
// accepts its form-1 seal not matching any more. A row not sealed yet is just overwritten: the
// sealer seals the erased form. The sealer's advisory lock, taken blocking here and held to the
// caller's commit, keeps sealing and erasure from interleaving (the caller's transaction is read
// committed, the default: each statement after the lock sees every seal committed before it).
import type { Queryable, Tx } from '../db/types.js';
import { commitment, rowHashIn, SEAL_FORM, sealIn, setAt, writeSalts, type ErasedFields, type Form, type Salts } from './forms.js';
import { chainHash, ROW_JSON, rowHash, SEAL_LOCK_KEY, type SealedTable } from './hashes.js';
import { ERASURE_MARKER, isChatIdKey, isErasableKey, isPseudonym, parsePointer, personalLeaves, type PersonalForm, type PersonalLeaf } from './personal-fields.js';
import { readHead } from './seal.js';

/** The erasure's own record id and the operator's reference (e.g. GDPR-2026-001). */
export interface SealedErasure {
  id: string;
  reference: string;
}

export interface RowErasure {
  source: SealedTable;
  id: number;
  /** JSON pointers into the row as sealed: /actor_name, /data/reporter_name, /before/notes, ... */
  pointers: string[];
  /** What a chat-id field becomes; without it, the marker. */
  chatIdPseudonym?: string;
}

/** A field erased in a sealed row, as the erasure's record names it: [table, row id, pointer, value left]. */
export type ErasedFieldRecord = [SealedTable, number, string, string];

/** The row no longer matches its seal: erasing it would hide that. */
export class SealMismatchError extends Error {
  constructor(readonly source: SealedTable, readonly rowId: number, readonly form: Form) {
    super(`${source} row ${rowId} does not match its form-${form} seal (it was edited behind the service's back): run verify-audit; the erasure was refused`);
    this.name = 'SealMismatchError';
  }
}

/** The erasable leaves of a sealed row whose value `match` accepts, as JSON pointers (never staff's). */
export function personalPointers(source: SealedTable, row: Record<string, unknown>, match: (key: string, value: string) => boolean): string[] {
  return personalLeaves(source, row).filter((l) => match(l.key, l.value)).map((l) => l.pointer);
}

/** Rows as they are sealed (to_jsonb less the generated and bookkeeping columns), by id. Read in UTC. */
export async function loadSealedRows(db: Queryable, source: SealedTable, ids: number[], lock = false): Promise<Map<number, Record<string, unknown>>> {
  const { rows } = await db.query<{ id: number; row: Record<string, unknown> }>(
    `select r.id, ${ROW_JSON[source]} as row from ${source} r where r.id = any($1::bigint[]) order by r.id${lock ? ' for update' : ''}`,
    [ids],
  );
  return new Map(rows.map((r) => [Number(r.id), r.row]));
}

interface SealState {
  form: Form;
  rowHash: string;
  salts: Salts;
  erased: ErasedFields;
}

async function loadSeals(tx: Tx, source: SealedTable, ids: number[]): Promise<Map<number, SealState>> {
  // A row's latest form is its seal (a form-1 row re-sealed has a later one); salts are that seal's.
  const { rows } = await tx.query<{ row_id: number; form: Form; row_hash: string; salts: Salts | null; erased: ErasedFields | null }>(
    `select distinct on (c.row_id) c.row_id, c.form, encode(c.row_hash, 'hex') as row_hash, s.salts, s.erased
       from audit_chain c left join audit_seal_salts s on c.form <> 1 and s.source = c.source and s.row_id = c.row_id
      where c.source = $1::text and c.row_id = any($2::bigint[])
      order by c.row_id, c.form desc`,
    [source, ids],
  );
  return new Map(rows.map((r) => [Number(r.row_id), { form: r.form, rowHash: r.row_hash, salts: r.salts ?? {}, erased: r.erased ?? {} }]));
}

export interface SealedRowsErased {
  events: number;
  audit_log: number;
  /** The fields erased in sealed rows: the erasure's record must name them (verify.ts). */
  fields: ErasedFieldRecord[];
}

/**
 * Erases the named personal fields of the given rows of events and audit_log; returns how many
 * rows of each changed (a field already erased is left as it is: a second erasure changes nothing)
 * and the fields of sealed rows erased. Throws on a pointer that is not an erasable field of its
 * row, a row that does not exist, or a sealed row that does not match its seal (SealMismatchError).
 */
export async function eraseSealedRows(tx: Tx, erasure: SealedErasure, rows: RowErasure[]): Promise<SealedRowsErased> {
  const changed: SealedRowsErased = { events: 0, audit_log: 0, fields: [] };
  if (rows.length === 0) return changed;
  for (const r of rows) {
    if (r.chatIdPseudonym !== undefined && !isPseudonym(r.chatIdPseudonym)) throw new Error(`not a pseudonym: ${JSON.stringify(r.chatIdPseudonym)}`);
  }
  await tx.query('select pg_advisory_xact_lock($1::bigint)', [SEAL_LOCK_KEY]);
  // Rows read as the sealer reads them (UTC), the caller's time zone put back after.
  const { rows: zone } = await tx.query<{ tz: string }>("select current_setting('TimeZone') as tz");
  await tx.query("select set_config('TimeZone', 'UTC', true)");
  try {
    let head = await readHead(tx);
    for (const source of ['audit_log', 'events'] as const) {
      const mine = rows.filter((r) => r.source === source);
      if (mine.length === 0) continue;
      const ids = [...new Set(mine.map((r) => r.id))];
      const current = await loadSealedRows(tx, source, ids, true);
      const seals = await loadSeals(tx, source, ids);
      for (const request of mine) {
        const row = current.get(request.id);
        if (row === undefined) throw new Error(`${source} row ${request.id}: not found`);
        let seal = seals.get(request.id);
        if (seal !== undefined && seal.form === 1) {
          if (rowHash(source, row) !== seal.rowHash) throw new SealMismatchError(source, request.id, 1);
          const { rh, salts } = sealIn(SEAL_FORM, source, row);
          head = { rows: head.rows + 1, hash: chainHash(head.hash, head.rows + 1, rh) };
          await tx.query(
            `insert into audit_chain (position, source, row_id, row_hash, chain_hash, form)
             values ($1::bigint, $2::text, $3::bigint, decode($4::text, 'hex'), decode($5::text, 'hex'), $6::int)`,
            [head.rows, source, request.id, rh, head.hash, SEAL_FORM],
          );
          seal = { form: SEAL_FORM, rowHash: rh, salts, erased: {} };
          seals.set(request.id, seal);
          await writeSalts(tx, [{ source, id: request.id, salts }]);
        } else if (seal !== undefined && seal.form !== 1) {
          if (rowHashIn(seal.form, source, row, seal.salts, seal.erased).hash !== seal.rowHash) throw new SealMismatchError(source, request.id, seal.form);
        }
        // The leaves the row's seal commits to (a form-2 seal: staff's too, which are never erased).
        const form: PersonalForm = seal?.form === 2 ? 2 : 3;
        const leaves = new Map(personalLeaves(source, row, form).map((l) => [l.pointer, l]));
        for (const p of request.pointers) {
          const leaf = leaves.get(p);
          if (leaf === undefined || !isErasableKey(leaf.key)) throw new Error(`${source} row ${request.id}: ${p} is not an erasable personal field`);
        }
        const edits = eraseLeaves(request, [...new Set(request.pointers)].map((p) => leaves.get(p)!), seal, erasure);
        if (edits.length === 0) continue;
        await writeRow(tx, source, request.id, edits);
        if (seal !== undefined) for (const e of edits) changed.fields.push([source, request.id, e.pointer, e.value]);
        if (seal !== undefined) {
          await tx.query('update audit_seal_salts set salts = $3::jsonb, erased = $4::jsonb where source = $1::text and row_id = $2::bigint', [
            source, request.id, JSON.stringify(seal.salts), JSON.stringify(seal.erased),
          ]);
        }
        // The rows just written are what a later request for the same row starts from.
        for (const e of edits) setAt(row, parsePointer(e.pointer), e.value);
        changed[source]++;
      }
    }
  } finally {
    await tx.query("select set_config('TimeZone', $1::text, true)", [zone[0]!.tz]);
  }
  return changed;
}

/** The new values of the leaves; on a sealed row, moves each one's salt to a kept commitment. */
function eraseLeaves(request: RowErasure, leaves: PersonalLeaf[], seal: SealState | undefined, erasure: SealedErasure): { pointer: string; value: string }[] {
  const edits: { pointer: string; value: string }[] = [];
  for (const leaf of leaves) {
    const value = isChatIdKey(leaf.key) && request.chatIdPseudonym !== undefined ? request.chatIdPseudonym : ERASURE_MARKER;
    if (seal === undefined) {
      if (leaf.value !== value) edits.push({ pointer: leaf.pointer, value });
      continue;
    }
    const salt = seal.salts[leaf.pointer];
    // No salt: erased before (the row matched its seal, so the value is already a marker or pseudonym).
    if (salt === undefined || leaf.value === value) continue;
    seal.erased[leaf.pointer] = { commitment: commitment(seal.form === 2 ? 2 : 3, salt, leaf.value), erasure: erasure.id, reference: erasure.reference, value };
    delete seal.salts[leaf.pointer];
    edits.push({ pointer: leaf.pointer, value });
  }
  return edits;
}

/** One update per row: top-level columns set, jsonb leaves replaced with jsonb_set. */
async function writeRow(tx: Tx, source: SealedTable, id: number, edits: { pointer: string; value: string }[]): Promise<void> {
  const values: unknown[] = [id];
  const param = (v: unknown, cast: string) => {
    values.push(v);
    return `$${values.length}::${cast}`;
  };
  const byColumn = new Map<string, string>();
  for (const e of edits) {
    const [column, ...path] = parsePointer(e.pointer);
    const col = column!;
    if (!/^[a-z_]+$/.test(col)) throw new Error(`${source}: not a column: ${col}`);
    if (path.length === 0) byColumn.set(col, param(e.value, 'text'));
    else byColumn.set(col, `jsonb_set(${byColumn.get(col) ?? col}, ${param(path, 'text[]')}, to_jsonb(${param(e.value, 'text')}))`);
  }
  const sets = [...byColumn].map(([col, expr]) => `${col} = ${expr}`).join(', ');
  const { rowCount } = await tx.query(`update ${source} set ${sets} where id = $1::bigint`, values);
  if (rowCount !== 1) throw new Error(`${source} row ${id}: not updated`);
}
