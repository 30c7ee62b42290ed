// Read-your-writes for the replicas (replicas.ts, issue 22). Each caller's latest change is a WAL
// position: after a request that changes something, the primary's `pg_current_wal_lsn()` (at or
// past every commit the request made) is kept in the unlogged table `read_positions` on the primary,
// before the answer leaves. Every instance reads the same table, so the caller's next request sees
// its writes on whichever instance it lands.
import type { Queryable } from './types.js';

/**
 * Read positions older than this are deleted (by every instance, now and then): a replica lagging
 * that far serves nothing anyway (REPLICA_MAX_LAG_SECONDS is at most 300).
 */
const POSITION_KEEP_MINUTES = 15;

/** A WAL position ("16/B374D848") as a number that compares. */
export function parseLsn(text: string): bigint {
  const slash = text.indexOf('/');
  if (slash < 1) throw new Error(`not a WAL position: ${text}`);
  return (BigInt(`0x${text.slice(0, slash)}`) << 32n) + BigInt(`0x${text.slice(slash + 1)}`);
}

export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/**
 * After a request that changed something: the primary's WAL position now (at or past every commit
 * the request made) becomes its caller's read position, on the primary, before the answer leaves.
 */
export async function recordPosition(primary: Queryable, caller: string): Promise<void> {
  await primary.query(
    `insert into read_positions (caller, lsn) values ($1::text, pg_current_wal_lsn())
     on conflict (caller) do update set lsn = greatest(read_positions.lsn, excluded.lsn), updated_at = now()`,
    [caller],
    { name: 'record_read_position' },
  );
}

/** The caller's read position (0n when it changed nothing lately). */
export async function positionOf(primary: Queryable, caller: string): Promise<bigint> {
  const { rows } = await primary.query<{ lsn: string }>('select lsn::text as lsn from read_positions where caller = $1::text', [caller], { name: 'read_position' });
  return rows[0] ? parseLsn(rows[0].lsn) : 0n;
}

/** Deletes the read positions past POSITION_KEEP_MINUTES (each instance's replica poller, now and then). */
export function deleteOldPositions(primary: Queryable): Promise<unknown> {
  return primary.query(`delete from read_positions where updated_at < now() - make_interval(mins => $1::int)`, [POSITION_KEEP_MINUTES]);
}
