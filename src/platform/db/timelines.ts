// Timelines (issue 40): a promotion starts a new one, and WAL positions compare only within one.
// The primary's timeline is read from its current WAL file name; replicas are asked which
// timelines they have replayed a mark of (migration 0034), since a row written on a timeline
// reaches only the servers that follow it.
import type { Queryable } from './types.js';

/**
 * SQL for the server's timeline now (the first eight hex digits of its current WAL file name), or
 * null on a server in recovery, which has no WAL position of its own to name.
 */
export const TIMELINE_SQL = "case when pg_is_in_recovery() then null else ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int end";

/** SQL for the latest timeline a server has a mark of (null: none yet). */
export const MARKED_TIMELINE_SQL = '(select max(timeline) from timeline_marks)';

/** Marks the primary's timeline, once (the replicas that follow it replay the mark). */
export async function markTimeline(primary: Queryable, timeline: number): Promise<void> {
  await primary.query('insert into timeline_marks (timeline) values ($1::int) on conflict (timeline) do nothing', [timeline], { name: 'mark_timeline' });
}
