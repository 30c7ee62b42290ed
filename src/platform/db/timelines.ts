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

/** After a mark could not be written (a primary made read-only, say), how long before it is tried again. */
const MARK_RETRY_MS = 5_000;

/** The replica poller's sample of the primary. */
export interface PrimarySample {
  lsn: string;
  timeline: number;
  /** pg_postmaster_start_time(): another one may be another copy of the database. */
  started: string;
  readOnly: boolean;
  /** This instance's mark is there. */
  marked: boolean;
}

/** One instance's mark: the primary's timeline and server as its poller last saw them, and the token it wrote there. */
export class TimelineMark {
  timeline: number | undefined;
  token: string | undefined;
  private started: string | undefined;
  private retryAt = 0;

  async sample(primary: Queryable): Promise<PrimarySample> {
    const { rows } = await primary.query<{ lsn: string; timeline: number; started: string; read_only: boolean; marked: boolean }>(
      `select pg_current_wal_lsn()::text as lsn, ${TIMELINE_SQL} as timeline, pg_postmaster_start_time()::text as started,
              current_setting('transaction_read_only') = 'on' as read_only, ${HAS_MARK_SQL(1)} as marked`,
      [this.token ?? null],
      { name: 'primary_wal_now' },
    );
    const row = rows[0]!;
    return { lsn: row.lsn, timeline: row.timeline, started: row.started, readOnly: row.read_only, marked: row.marked };
  }

  /**
   * Takes the sample's timeline and server; true when they are not the last ones: a promotion, or
   * another server (a restore or pg_upgrade starts again at timeline 1 with the old marks, this
   * instance's among them). The mark written before proves nothing then (a promoted standby had
   * replayed it).
   */
  changed(sample: PrimarySample): boolean {
    if (sample.timeline === this.timeline && sample.started === this.started) return false;
    this.timeline = sample.timeline;
    this.started = sample.started;
    this.token = undefined;
    return true;
  }

  /**
   * Writes a mark where this instance has none, unless the primary refuses writes. A failed write is
   * tried again later, not every poll: on a primary that refuses writes each failure would also
   * replace the pool's connections (postgres.ts).
   */
  async write(primary: Queryable, sample: PrimarySample, now: number): Promise<void> {
    if ((this.token !== undefined && sample.marked) || sample.readOnly || now < this.retryAt) return;
    const token = randomUUID();
    try {
      await primary.query('insert into timeline_marks (token, timeline) values ($1::uuid, $2::int)', [token, sample.timeline], { name: 'write_timeline_mark' });
      this.token = token;
    } catch {
      this.retryAt = now + MARK_RETRY_MS;
    }
  }
}

/** Marks kept this long: an instance whose own mark is older writes a new one when it finds it gone. */
const MARK_KEEP_DAYS = 30;

/** Deletes the marks past MARK_KEEP_DAYS but this instance's own (each poller, now and then). */
export function deleteOldMarks(primary: Queryable, own: string | undefined): Promise<unknown> {
  return primary.query('delete from timeline_marks where marked_at < now() - make_interval(days => $1::int) and token is distinct from $2::uuid', [MARK_KEEP_DAYS, own ?? null]);
}
