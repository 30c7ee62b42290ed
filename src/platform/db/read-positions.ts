// Read-your-writes for the replicas (replicas.ts, issue 22). Each caller's latest change is a WAL
// position: after a request that changes something, the primary's `pg_current_wal_lsn()` (at or
// past every commit the request made) is kept in the table `read_positions` on the primary, with
// the timeline it was taken on, before the answer leaves. Every instance reads the same table, so
// the caller's next request sees its writes on whichever instance it lands; the table is logged
// (migration 0033), so a promoted standby has it too, and a position of another timeline than the
// primary's (taken before a failover) does not compare: the caller reads from the primary.
import { TIMELINE_SQL as TIMELINE } from './timelines.js';
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

/** A position no replica reaches: the caller's read goes to the primary. */
export const UNREACHABLE = 1n << 64n;

/**
 * After a request that changed something: the primary's WAL position now (at or past every commit
 * the request made) becomes its caller's read position, on the primary, before the answer leaves.
 */
export async function recordPosition(primary: Queryable, caller: string): Promise<void> {
  await primary.query(
    `insert into read_positions (caller, lsn, timeline) values ($1::text, pg_current_wal_lsn(), ${TIMELINE})
     on conflict (caller) do update
       set lsn = case when read_positions.timeline is not distinct from excluded.timeline then greatest(read_positions.lsn, excluded.lsn) else excluded.lsn end,
           timeline = excluded.timeline, updated_at = now()`,
    [caller],
    { name: 'record_read_position' },
  );
}

/** A caller's read position, with the primary's timeline when it was read. */
export interface ReadPosition {
  /** 0n when it changed nothing lately; UNREACHABLE when taken on another timeline than the primary's now. */
  lsn: bigint;
  /** The primary's timeline as it answered (replicas.ts compares it with the one its replicas follow). */
  timeline: number | null;
}

/**
 * The caller's read position (none for a request without a caller). A position taken on another
 * timeline (a failover since) does not compare. Positions the release before wrote carry no
 * timeline and compare as they did.
 */
export async function positionOf(primary: Queryable, caller: string | undefined): Promise<ReadPosition> {
  const { rows } = await primary.query<{ now: number | null; lsn: string | null; same: boolean | null }>(
    `select ${TIMELINE} as now, p.lsn::text as lsn, p.timeline is null or p.timeline = ${TIMELINE} as same
       from (select 1) as one left join read_positions p on p.caller = $1::text`,
    [caller ?? null],
    { name: 'read_position' },
  );
  const row = rows[0]!;
  return { lsn: row.lsn === null ? 0n : row.same === false ? UNREACHABLE : parseLsn(row.lsn), timeline: row.now };
}

/** Deletes the read positions past POSITION_KEEP_MINUTES (each instance's replica poller, now and then). */
export function deleteOldPositions(primary: Queryable): Promise<unknown> {
  return primary.query(`delete from read_positions where updated_at < now() - make_interval(mins => $1::int)`, [POSITION_KEEP_MINUTES]);
}
