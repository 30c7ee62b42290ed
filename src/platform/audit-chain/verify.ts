// verify-audit (issue 21): walks the chain from the first seal in batches (constant memory), each
// seal joined to the row it names, recomputing row_hash and chain_hash. The first row whose
// content, position or presence does not match is named; after the walk, a row the sealer
// has passed that no seal covers is an insertion into the sealed past. A checkpoint passed as
// `against` must be one of the chain's chain_hash values (the chain extends it).
//
// Seals come in three forms. Form 1 hashes the row whole (hashes.ts). Forms 2 (issue 32) and 3
// (issue 39, the sealer's) hash it with its personal fields as salted commitments (forms.ts): a
// field erased since verifies by the commitment its erasure kept, if its value is the erasure
// marker (or a pseudonym for a chat id) and the erasure's record names the row, the field and that
// value (erasure-records.ts); anything else is an edit. A form-1 seal whose row no longer matches
// is accepted only when the same row has a later seal in form 2 or 3 (an erasure re-sealed it),
// which is checked in its turn. The rows erased are reported by the references of their erasures.
import { performance } from 'node:perf_hooks';
import type { Db, Queryable } from '../db/types.js';
import { ErasureClaims } from './erasure-records.js';
import { rowHashIn, type ErasedFields, type Form, type Salts } from './forms.js';
import { chainHash, GENESIS_HASH, ROW_JSON, rowHash, SEALED_TABLES, UTC, type SealedTable } from './hashes.js';

export const VERIFY_BATCH = 5_000;

export type Problem =
  /** `field`: a personal field neither sealed nor erased; with `erasure`, marked erased by an erasure whose record does not name it. */
  | { kind: 'edited'; source: SealedTable; id: number; position: number; field?: string; erasure?: string }
  | { kind: 'reordered'; source: SealedTable; id: number; position: number; sealedAt: number }
  | { kind: 'deleted'; source: SealedTable; id: number; position: number }
  | { kind: 'inserted'; source: SealedTable; id: number }
  | { kind: 'seal_altered'; position: number }
  | { kind: 'seal_missing'; position: number }
  | { kind: 'checkpoint_not_found'; against: string };

export interface Verification {
  ok: boolean;
  /** Seals checked (all of them when ok). */
  rows: number;
  /** The last chain_hash checked. */
  head: string;
  problem: Problem | null;
  /** Rows not sealed yet (committed after the sealer's last pass, or still in flight). */
  pending: number;
  /** Where the checkpoint was found (its row count), when `against` was given and found. */
  checkpointAt: number | null;
  /** Rows whose personal fields were erased, by the erasure's reference (in the seals checked). */
  erased: Array<{ reference: string; rows: number }>;
  seconds: number;
}

interface SealRow {
  position: number;
  source: SealedTable;
  row_id: number;
  row_hash: string;
  chain_hash: string;
  form: Form;
  row: Record<string, unknown> | null;
  salts: Salts | null;
  erased_fields: ErasedFields | null;
  /** Form 1: the position of the same row's seal in form 2 or 3 later in the chain, if any. */
  resealed_at: number | null;
}

const BATCH_SQL = `select c.position, c.source, c.row_id, encode(c.row_hash, 'hex') as row_hash, encode(c.chain_hash, 'hex') as chain_hash, c.form,
    case c.source
      when 'events' then (select ${ROW_JSON.events} from events r where r.id = c.row_id)
      else (select ${ROW_JSON.audit_log} from audit_log r where r.id = c.row_id)
    end as row,
    s.salts, s.erased as erased_fields,
    case when c.form = 1 then (select c2.position from audit_chain c2
      where c2.source = c.source and c2.row_id = c.row_id and c2.form <> 1 and c2.position > c.position) end as resealed_at
  from audit_chain c left join audit_seal_salts s on c.form <> 1 and s.source = c.source and s.row_id = c.row_id
  where c.position > $1::bigint order by c.position limit $2::int`;

export function describeProblem(p: Problem): string {
  switch (p.kind) {
    case 'edited':
      if (p.erasure !== undefined) return `${p.source} row ${p.id} (position ${p.position}): ${p.field} is marked erased by erasure ${p.erasure}, whose record does not name it (edited)`;
      return `${p.source} row ${p.id} (position ${p.position}): its content does not match its seal (edited${p.field === undefined ? '' : `: ${p.field} is neither sealed nor erased`})`;
    case 'reordered':
      return `${p.source} row ${p.id} (position ${p.position}): holds the content sealed at position ${p.sealedAt} (reordered)`;
    case 'deleted':
      return `${p.source} row ${p.id} (position ${p.position}): sealed but no longer in the table (deleted)`;
    case 'inserted':
      return `${p.source} row ${p.id}: in the table among sealed rows but in no seal (inserted)`;
    case 'seal_altered':
      return `seal at position ${p.position}: its chain hash does not follow from the one before (the chain was altered)`;
    case 'seal_missing':
      return `seal at position ${p.position}: missing (the chain has a gap)`;
    case 'checkpoint_not_found':
      return `checkpoint ${p.against}: not a head of this chain (rows removed from its end, or the chain rewritten)`;
  }
}

/** Reads the whole chain in one repeatable-read transaction: a consistent view while sealing goes on. */
export async function verifyChain(db: Db, options: { against?: string; batch?: number } = {}): Promise<Verification> {
  const started = performance.now();
  const against = options.against?.toLowerCase();
  const batch = options.batch ?? VERIFY_BATCH;
  return db.transaction(async (tx) => {
    await tx.exec('set transaction isolation level repeatable read, read only');
    await tx.exec(UTC);
    let previous = GENESIS_HASH;
    let position = 0;
    let checkpointAt: number | null = against === GENESIS_HASH ? 0 : null;
    let problem: Problem | null = null;
    const erased = new Map<string, number>();
    const claims = new ErasureClaims();
    const done = (): Verification => ({
      ok: problem === null, rows: position, head: previous, problem, pending: 0, checkpointAt,
      erased: [...erased].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([reference, rows]) => ({ reference, rows })),
      seconds: (performance.now() - started) / 1000,
    });

    walk: for (;;) {
      const { rows } = await tx.query<SealRow>(BATCH_SQL, [position, batch]);
      if (rows.length === 0) break;
      // Row hashes of this batch by position: a row holding another seal's content was moved.
      const byHash = new Map(rows.map((s) => [s.row_hash, s.position]));
      for (const seal of rows) {
        if (seal.position !== position + 1) {
          problem = { kind: 'seal_missing', position: position + 1 };
          break walk;
        }
        if (seal.row === null) {
          problem = { kind: 'deleted', source: seal.source, id: seal.row_id, position: seal.position };
          break walk;
        }
        problem = checkRow(seal, seal.row, byHash, erased, claims);
        if (problem !== null) break walk;
        const expected = chainHash(previous, seal.position, seal.row_hash);
        if (expected !== seal.chain_hash) {
          problem = { kind: 'seal_altered', position: seal.position };
          break walk;
        }
        previous = expected;
        position = seal.position;
        if (checkpointAt === null && expected === against) checkpointAt = position;
      }
      if (rows.length < batch) break;
    }
    if (problem !== null) return done();

    const unrecorded = await claims.firstUnrecorded(tx);
    if (unrecorded !== undefined) {
      const { source, id, position: at, pointer, erasure } = unrecorded;
      problem = { kind: 'edited', source, id, position: at, field: pointer, erasure };
      return done();
    }
    const inserted = await insertedRow(tx);
    if (inserted) {
      problem = { kind: 'inserted', ...inserted };
      return done();
    }
    if (against !== undefined && checkpointAt === null) problem = { kind: 'checkpoint_not_found', against };
    const result = done();
    result.pending = await pendingRows(tx);
    return result;
  });
}

/**
 * The row against its seal, by the seal's form; counts the references of its erased fields into
 * `erased` and keeps them in `claims`, to be found in their erasures' records. A form-1 row that
 * no longer matches passes when an erasure re-sealed it later in the chain: that seal is checked
 * when the walk reaches it.
 */
function checkRow(seal: SealRow, row: Record<string, unknown>, byHash: Map<string, number>, erased: Map<string, number>, claims: ErasureClaims): Problem | null {
  const at = { source: seal.source, id: seal.row_id, position: seal.position };
  let actual: string | null;
  if (seal.form === 1) {
    actual = rowHash(seal.source, row);
    if (actual !== seal.row_hash && seal.resealed_at !== null) return null;
  } else {
    const f = rowHashIn(seal.form, seal.source, row, seal.salts ?? {}, seal.erased_fields ?? {});
    if (f.unaccounted !== null) return { kind: 'edited', ...at, field: f.unaccounted };
    actual = f.hash;
    if (actual === seal.row_hash) {
      for (const reference of new Set(f.used.map((u) => u.reference))) erased.set(reference, (erased.get(reference) ?? 0) + 1);
      claims.add(at, f.used);
    }
  }
  if (actual === seal.row_hash) return null;
  const elsewhere = actual === null ? undefined : byHash.get(actual);
  return elsewhere !== undefined ? { kind: 'reordered', ...at, sealedAt: elsewhere } : { kind: 'edited', ...at };
}

/** A table's rows up to (or after) the sealer's cursor, aliased r, joined to the state s. */
const behindCursor = (source: SealedTable) =>
  `${source} r cross join audit_chain_state s where (r.sealing_tx, r.id) <= (s.${source}_tx, s.${source}_id)`;
export const afterCursor = (source: SealedTable) =>
  `${source} r cross join audit_chain_state s where (r.sealing_tx, r.id) > (s.${source}_tx, s.${source}_id)`;

/** The first row the sealer has passed that no seal covers, in chain order. */
async function insertedRow(db: Queryable): Promise<{ source: SealedTable; id: number } | undefined> {
  for (const source of SEALED_TABLES) {
    const { rows } = await db.query<{ id: number }>(
      `select r.id from ${behindCursor(source)}
          and not exists (select 1 from audit_chain c where c.source = '${source}' and c.row_id = r.id)
        order by r.sealing_tx, r.id limit 1`,
    );
    if (rows[0]) return { source, id: rows[0].id };
  }
  return undefined;
}

/** Rows the sealer has not reached yet. */
export async function pendingRows(db: Queryable): Promise<number> {
  let total = 0;
  for (const source of SEALED_TABLES) {
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from ${afterCursor(source)}`);
    total += rows[0]?.n ?? 0;
  }
  return total;
}

/** Records a run for GET /admin/health (the audit section shows the latest). */
export async function recordVerification(db: Queryable, v: Verification, against: string | undefined): Promise<void> {
  await db.query(
    `insert into audit_verifications (ok, rows_verified, head_hash, against, problem, seconds)
     values ($1::boolean, $2::bigint, $3::text, $4::text, $5::text, $6::float8)`,
    [v.ok, v.rows, v.head, against ?? null, v.problem ? describeProblem(v.problem) : null, v.seconds],
  );
}
