// The database series of the metrics (issue 20): each environment's pool (size, idle, waiting,
// read from the Db at scrape time), the time of every transaction, and the failures that mean the
// database is unavailable or too slow. Reported by the environment's Db (src/platform/environment-db.ts)
// only when metrics are on: a timer per transaction and a promise per call that nothing would read otherwise.
import { fromDbError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { DbError, type Db } from './types.js';

export type DbFailureKind = 'unavailable' | 'timeout';

const QUERY_CANCELED = '57014';

/** A statement cancelled (statement_timeout) is a timeout; what the API answers 503 for is unavailable. */
export function failureKind(err: unknown): DbFailureKind | undefined {
  if (!(err instanceof DbError)) return undefined;
  if (err.code === QUERY_CANCELED) return 'timeout';
  return fromDbError(err).statusCode === 503 ? 'unavailable' : undefined;
}

/** What the environment's Db (src/platform/environment-db.ts) reports when metrics are on. */
export interface DbObservation {
  /** A transaction ended (committed or rolled back) `seconds` after it asked for a connection. */
  transaction(seconds: number): void;
  /** A call failed: counted when the failure means the database is unavailable or timed out. */
  failed(err: unknown): void;
}

/**
 * Registers the database series; `pools` lists the open environments' databases at scrape time.
 * Returns each environment's observation: plain counts, no label lookup per call.
 */
export function observeDatabases(metrics: Metrics, pools: () => Iterable<{ name: string; db: Db }>): (environment: string) => DbObservation {
  const stat = (key: 'size' | 'idle' | 'waiting', help: string) =>
    metrics.gauge(`cms_db_pool_${key}`, help, ['environment'], (gauge) => {
      gauge.reset();
      for (const { name, db } of pools()) gauge.set({ environment: name }, db.poolStats()[key]);
    });
  stat('size', 'Database connections open, per environment (PGlite: one)');
  stat('idle', 'Database connections open and not in use, per environment');
  stat('waiting', 'Calls waiting for a database connection, per environment');
  const durations = metrics.countedHistogram('cms_db_transaction_duration_seconds', 'Time of each database transaction from asking for a connection to commit or rollback, per environment', ['environment'], [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]);
  const failures = metrics.counter('cms_db_errors_total', 'Database calls failed because the database was unavailable or a statement timed out, per environment and kind', ['environment', 'kind']);

  return (environment) => {
    const series = durations.get(environment) ?? durations.create(environment, { environment });
    // Both kinds at zero from the start: an alert on their increase needs a series to compare with.
    for (const kind of ['unavailable', 'timeout'] as const) failures.inc({ environment, kind }, 0);
    return {
      transaction: (seconds) => durations.observe(series, seconds),
      failed(err) {
        const kind = failureKind(err);
        if (kind) failures.inc({ environment, kind });
      },
    };
  };
}
