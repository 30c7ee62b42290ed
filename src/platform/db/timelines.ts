// Timelines (issue 40): a promotion starts a new one, and WAL positions compare only within one.
// The primary's timeline is read from its current WAL file name; a replica follows the primary when
// it has replayed a mark (a random token, migration 0034) written on the primary's timeline now,
// since a row written on a timeline reaches only the servers that follow it.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './types.js';

/**
 * SQL for the server's timeline now (the first eight hex digits of its current WAL file name), or
 * null on a server in recovery, which has no WAL position of its own to name.
 */
export const TIMELINE_SQL = "case when pg_is_in_recovery() then null else ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int end";

/** SQL for whether the server has the mark whose token is the parameter `$n` (null: no). */
export const HAS_MARK_SQL = (n: number) => `exists (select 1 from timeline_marks where token = $${n}::uuid)`;

/** Writes a new mark of the primary's timeline; returns its token. */
export async function writeMark(primary: Queryable, timeline: number): Promise<string> {
  const token = randomUUID();
  await primary.query('insert into timeline_marks (token, timeline) values ($1::uuid, $2::int)', [token, timeline], { name: 'write_timeline_mark' });
  return token;
}
