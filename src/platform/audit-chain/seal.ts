// Sealing (issue 21): rows of events and audit_log whose transactions have all ended, appended to
// the chain in the order (sealing_tx, table, id), in transactions of at most `limit` rows, in form
// 3 (forms.ts: salted commitments of the personal fields, the salts in audit_seal_salts); then,
// with what the limit leaves, rows sealed in form 1 are sealed again in form 3 (reseal.ts). One
// sealer at a time per database (pg_try_advisory_xact_lock): an instance that finds the lock held
// leaves the work to its holder, and a holder that dies releases it with its connection, its
// batch rolled back whole. Nothing here is on a request's path.
import type { Db, Queryable, Tx } from '../db/types.js';
import { SEAL_FORM, sealIn, writeSalts, type Salts } from './forms.js';
import { resealForm1 } from './reseal.js';
import { chainHash, compareKeys, GENESIS_HASH, ROW_JSON, SEAL_LOCK_KEY, SEALED_TABLES, UTC, type ChainHead, type ChainKey, type SealedTable } from './hashes.js';

export const SEAL_BATCH_LIMIT = 2_000;

export interface BatchResult {
  /** False when another sealer holds the lock (nothing was done here). */
  locked: boolean;
  sealed: number;
  /** Rows sealed in form 1 sealed again in form 3 (reseal.ts), with what the batch's limit left. */
  resealed: number;
  /** The batch stopped at its limit: more rows may be waiting. */
  full: boolean;
  head: ChainHead;
}

interface Candidate extends ChainKey {
  row: Record<string, unknown>;
}

/** Where the sealer stands in each table: every row up to this (sealing_tx, id) is sealed. */
export type Cursors = Record<SealedTable, { tx: string; id: number }>;

export async function readHead(db: Queryable): Promise<ChainHead> {
  const { rows } = await db.query<{ position: number; hash: string }>(
    "select position, encode(chain_hash, 'hex') as hash from audit_chain order by position desc limit 1",
  );
  return rows[0] ? { rows: rows[0].position, hash: rows[0].hash } : { rows: 0, hash: GENESIS_HASH };
}

/** The sealer's cursors and the chain's head, in one statement. */
export async function readState(db: Queryable): Promise<{ cursors: Cursors; head: ChainHead }> {
  const { rows } = await db.query<{ audit_log_tx: string; audit_log_id: number; events_tx: string; events_id: number; position: number | null; hash: string | null }>(
    `select s.audit_log_tx::text as audit_log_tx, s.audit_log_id, s.events_tx::text as events_tx, s.events_id, h.position, encode(h.chain_hash, 'hex') as hash
       from audit_chain_state s left join lateral (select position, chain_hash from audit_chain order by position desc limit 1) h on true`,
  );
  const r = rows[0]!;
  return {
    cursors: { audit_log: { tx: r.audit_log_tx, id: r.audit_log_id }, events: { tx: r.events_tx, id: r.events_id } },
    head: r.position === null ? { rows: 0, hash: GENESIS_HASH } : { rows: r.position, hash: r.hash! },
  };
}

/**
 * The rows of one table after its cursor whose transactions have all ended (below `below`), in
 * chain order: one range of events_sealing_idx / audit_log_sealing_idx. A row already sealed is
 * passed over (only after a rebase can one be found there). The test is a scalar subquery with
 * `limit 1`, one probe of audit_chain's (source, row_id) index per row: written as `exists`,
 * PostgreSQL may instead hash every seal of the table once per batch when its statistics make
 * audit_chain look small (on 10M events with a stale analyse, 7 s a batch instead of 0.1 s).
 */
export const candidatesSql = (source: SealedTable) => `
select r.sealing_tx::text as tx, r.id,
       case when (select true from audit_chain c where c.source = '${source}' and c.row_id = r.id limit 1) then null else ${ROW_JSON[source]} end as row
  from ${source} r
 where (r.sealing_tx, r.id) > ($1::xid8, $2::bigint) and r.sealing_tx < $3::xid8
 order by r.sealing_tx, r.id limit $4::int`;

function candidates(tx: Tx, source: SealedTable, after: { tx: string; id: number }, below: string, limit: number) {
  return tx.query<{ tx: string; id: number; row: Record<string, unknown> | null }>(candidatesSql(source), [after.tx, after.id, below, limit]);
}

/** One batch in one transaction: at most `limit` rows sealed, or nothing when the lock is held. */
export async function sealBatch(db: Db, limit = SEAL_BATCH_LIMIT): Promise<BatchResult> {
  return db.transaction(async (tx) => {
    // The lock and the mark in one statement; the head and the cursors in the next, read under the
    // lock (a statement's snapshot is taken when it starts). On the embedded store the batch holds
    // the one connection: every statement saved is time the requests do not wait.
    const { rows: start } = await tx.query<{ locked: boolean; below: string }>(
      'select pg_try_advisory_xact_lock($1::bigint) as locked, pg_snapshot_xmin(pg_current_snapshot())::text as below',
      [SEAL_LOCK_KEY],
    );
    const { locked, below } = start[0]!;
    if (!locked) return { locked: false, sealed: 0, resealed: 0, full: false, head: await readHead(tx) };
    await tx.exec(UTC);
    const { head, cursors: read } = await readState(tx);
    const cursors = SEALED_TABLES.some((t) => BigInt(read[t].tx) >= BigInt(below)) ? await rebase(tx, below) : read;
    const found = await Promise.all(SEALED_TABLES.map(async (source) => ({ source, rows: (await candidates(tx, source, cursors[source], below, limit)).rows })));

    // A table that filled its limit may have more rows after its last one: only rows up to the
    // smallest such last key are certain to be next in the chain's order.
    let cut: ChainKey | undefined;
    for (const { source, rows } of found) {
      const last = rows.at(-1);
      if (rows.length < limit || last === undefined) continue;
      const key = { tx: last.tx, source, id: last.id };
      if (cut === undefined || compareKeys(key, cut) < 0) cut = key;
    }
    const taken = found.map(({ source, rows }) => ({ source, rows: rows.filter((r) => cut === undefined || compareKeys({ tx: r.tx, source, id: r.id }, cut) <= 0) }));
    const batch: Candidate[] = taken
      .flatMap(({ source, rows }) => rows.flatMap((r) => (r.row === null ? [] : [{ tx: r.tx, source, id: r.id, row: r.row }])))
      .sort(compareKeys);

    if (batch.length > 0) {
      const positions: number[] = [];
      const sources: string[] = [];
      const ids: number[] = [];
      const rowHashes: string[] = [];
      const chainHashes: string[] = [];
      const salted: { source: string; id: number; salts: Salts }[] = [];
      let previous = head.hash;
      let position = head.rows;
      for (const c of batch) {
        position++;
        const { rh, salts } = sealIn(SEAL_FORM, c.source, c.row);
        previous = chainHash(previous, position, rh);
        positions.push(position);
        sources.push(c.source);
        ids.push(c.id);
        rowHashes.push(rh);
        chainHashes.push(previous);
        if (Object.keys(salts).length > 0) salted.push({ source: c.source, id: c.id, salts });
      }
      // The unique (source, row_id, form) makes a second seal of a row fail the batch, loudly.
      await tx.query(
        `insert into audit_chain (position, source, row_id, row_hash, chain_hash, form)
         select p, s, i, decode(rh, 'hex'), decode(ch, 'hex'), $6::int
           from unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[]) as t(p, s, i, rh, ch)`,
        [positions, sources, ids, rowHashes, chainHashes, SEAL_FORM],
      );
      await writeSalts(tx, salted);
      head.rows = position;
      head.hash = previous;
    }
    const moved = taken.filter(({ rows }) => rows.length > 0);
    if (moved.length > 0) {
      for (const { source, rows } of moved) cursors[source] = { tx: rows.at(-1)!.tx, id: rows.at(-1)!.id };
      await writeCursors(tx, cursors);
    }
    // Form-1 rows with what the limit leaves, one batch per pass: `full` is about new rows only, so
    // a large backlog after the upgrade goes at the sealer's pace, never holding a pass (or, on the
    // embedded store, the one connection) for long.
    const budget = limit - batch.length;
    const resealed = budget > 0 ? (await resealForm1(tx, head, budget)).resealed : 0;
    return { locked: true, sealed: batch.length, resealed, full: cut !== undefined, head };
  });
}

async function writeCursors(tx: Tx, c: Cursors): Promise<void> {
  await tx.query('update audit_chain_state set audit_log_tx = $1::xid8, audit_log_id = $2::bigint, events_tx = $3::xid8, events_id = $4::bigint', [
    c.audit_log.tx, c.audit_log.id, c.events.tx, c.events.id,
  ]);
}

/**
 * Transaction ids only grow on one server. A cursor at or above this server's mark means the
 * database now lives on another server (moved from the embedded store, restored from pg_dump):
 * the old server's ids, at or above this server's, are set to 0 (sealing_tx is not sealed
 * content) and the cursors start again from the beginning; that one pass over the tables passes
 * over the rows already sealed and seals the rest, and new rows are never left behind a cursor.
 */
async function rebase(tx: Tx, below: string): Promise<Cursors> {
  for (const source of SEALED_TABLES) await tx.query(`update ${source} set sealing_tx = '0' where sealing_tx >= $1::xid8`, [below]);
  const cursors: Cursors = { audit_log: { tx: '0', id: 0 }, events: { tx: '0', id: 0 } };
  await writeCursors(tx, cursors);
  return cursors;
}

/** Batches until nothing is left that can be sealed now, or another sealer holds the lock. */
export async function sealAvailable(db: Db, limit = SEAL_BATCH_LIMIT): Promise<BatchResult> {
  let total = 0;
  let resealed = 0;
  for (;;) {
    const result = await sealBatch(db, limit);
    total += result.sealed;
    resealed += result.resealed;
    if (!result.locked || !result.full) return { ...result, sealed: total, resealed };
  }
}
