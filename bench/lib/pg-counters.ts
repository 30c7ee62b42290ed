// PostgreSQL's own counters, read black-box from outside the service: which tables a load scanned
// (pg_stat_user_tables) and how many transactions the database committed (pg_stat_database). A
// statement outside a transaction is a transaction of its own, so the commits during a load count
// the statements the service ran for it: a request answered from a cache runs none.
import { setTimeout as sleep } from 'node:timers/promises';
import { admin } from './pg.js';

export interface Counters {
  /** Scans per table. */
  tables: { [table: string]: { seq: number; idx: number } };
  /** Transactions committed in the database. */
  commits: number;
}

/**
 * A backend hands its counters over at most once a second while busy and 10 s after going idle
 * (PGSTAT_IDLE_INTERVAL): wait this long after a load before reading what it did.
 */
export const STATS_FLUSH_MS = 11_000;

/**
 * Waits (at most `maxMs`) until no connection to `url`'s database runs a SELECT: the service may
 * still be working off requests queued for its pool when the load generator stopped (a write-only
 * background load does not count). It watches from `watchUrl`, another database of the server, so
 * that its own statements are not counted in the watched one's.
 */
export async function waitDrained(url: string, watchUrl: string, maxMs = 120_000): Promise<void> {
  const database = decodeURIComponent(new URL(url).pathname.slice(1));
  await admin(watchUrl, async (c) => {
    const until = Date.now() + maxMs;
    for (let quiet = 0; quiet < 3 && Date.now() < until; await sleep(200)) {
      const { rows } = await c.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = $1::text and state = 'active' and query ~* '^\\s*select'`,
        [database],
      );
      quiet = rows[0]?.n === 0 ? quiet + 1 : 0;
    }
  });
}

/**
 * The counters of `url`'s database once the load is over (waitDrained from `watchUrl`) and the
 * flush interval waited out. The two statements reading them count in the next reading's commits.
 */
export async function readCounters(url: string, watchUrl: string, tables: string[]): Promise<Counters> {
  await waitDrained(url, watchUrl);
  await sleep(STATS_FLUSH_MS);
  return countersNow(url, tables);
}

/** The counters of `url`'s database as its backends have handed them over so far. */
export async function countersNow(url: string, tables: string[]): Promise<Counters> {
  return admin(url, async (client) => {
    const t = await client.query<{ relname: string; seq_scan: string; idx_scan: string | null }>(
      'select relname, seq_scan, idx_scan from pg_stat_user_tables where relname = any($1::text[])',
      [tables],
    );
    const d = await client.query<{ xact_commit: string }>('select xact_commit from pg_stat_database where datname = current_database()');
    return {
      tables: Object.fromEntries(t.rows.map((r) => [r.relname, { seq: Number(r.seq_scan), idx: Number(r.idx_scan ?? 0) }])),
      commits: Number(d.rows[0]?.xact_commit ?? 0),
    };
  });
}

export function scanDelta(before: Counters, after: Counters, table: string): { seq: number; idx: number } {
  const a = after.tables[table];
  const b = before.tables[table];
  return { seq: (a?.seq ?? 0) - (b?.seq ?? 0), idx: (a?.idx ?? 0) - (b?.idx ?? 0) };
}
