// verify-audit (issue 21): walks the chain from the first seal in batches (constant memory), each
// seal joined to the row it names, recomputing row_hash and chain_hash. The first row whose
// content, position or presence does not match is named; after the walk, a row the sealer
// has passed that no seal covers is an insertion into the sealed past. A checkpoint passed as
// `against` must be one of the chain's chain_hash values (the chain extends it).
import { performance } from 'node:perf_hooks';
import type { Db, Queryable } from '../db/types.js';
import { chainHash, GENESIS_HASH, ROW_JSON, rowHash, SEALED_TABLES, UTC, type SealedTable } from './hashes.js';

export const VERIFY_BATCH = 5_000;

export type Problem =
  | { kind: 'edited'; source: SealedTable; id: number; position: number }
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
  seconds: number;
}

interface SealRow {
  position: number;
  source: SealedTable;
  row_id: number;
  row_hash: string;
  chain_hash: string;
  row: unknown;
}

const BATCH_SQL = `select c.position, c.source, c.row_id, encode(c.row_hash, 'hex') as row_hash, encode(c.chain_hash, 'hex') as chain_hash,
    case c.source
      when 'events' then (select ${ROW_JSON.events} from events r where r.id = c.row_id)
      else (select ${ROW_JSON.audit_log} from audit_log r where r.id = c.row_id)
    end as row
  from audit_chain c where c.position > $1::bigint order by c.position limit $2::int`;

export function describeProblem(p: Problem): string {
  switch (p.kind) {
    case 'edited':
      return `${p.source} row ${p.id} (position ${p.position}): its content does not match its seal (edited)`;
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
    const done = (): Verification => ({ ok: problem === null, rows: position, head: previous, problem, pending: 0, checkpointAt, seconds: (performance.now() - started) / 1000 });

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
        const actual = rowHash(seal.source, seal.row);
        if (actual !== seal.row_hash) {
          const elsewhere = byHash.get(actual);
          problem = elsewhere !== undefined
            ? { kind: 'reordered', source: seal.source, id: seal.row_id, position: seal.position, sealedAt: elsewhere }
            : { kind: 'edited', source: seal.source, id: seal.row_id, position: seal.position };
          break walk;
        }
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
