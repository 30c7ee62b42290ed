// An environment's database: opened as its configuration says (PostgreSQL where a URL is set, else
// PGlite under DATA_DIR), told apart when it is only unreachable, and wrapped for its callers.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Config, EnvironmentConfig } from '../config.js';
import type { DbObservation } from './db/observe.js';
import { openPglite, type PgliteDb } from './db/pglite.js';
import { openPostgres } from './db/postgres.js';
import { DbError, type Db, type QueryOptions } from './db/types.js';
import { scopedAs } from './db/transaction-guard.js';
import { fromDbError } from './errors.js';

export type OpenDb = (env: EnvironmentConfig) => Promise<Db>;

export function defaultOpenDb(config: Config, log: FastifyBaseLogger): OpenDb {
  return async (env) => {
    if (env.databaseUrl) {
      return openPostgres({
        connectionString: env.databaseUrl,
        directConnectionString: env.databaseDirectUrl,
        preparedStatements: config.databasePreparedStatements,
        max: config.databasePoolSize,
        connectionTimeoutMillis: config.databaseConnectTimeoutMs,
        statementTimeoutMillis: config.databaseStatementTimeoutMs,
        applicationName: `case-management-service:${env.name}`,
        onIdleError: (err) => log.error({ err, environment: env.name }, 'idle database connection failed'),
        // A multi-host URL (issue 30): the first writable host, and each failover followed.
        onHostChosen: (host) => log.info({ environment: env.name, host }, `${env.name} database: new connections go to ${host} (writable)`),
      });
    }
    return openPglite({ dataDir: config.dataDir === ':memory:' ? undefined : join(config.dataDir, env.name) });
  };
}

// Failures that mean "the server is not there (yet)", not "this deployment is broken".
const UNREACHABLE_SQLSTATES = new Set(['3D000', '28000', '28P01']);
export function isUnreachable(err: unknown): boolean {
  if (!(err instanceof DbError)) return false;
  return UNREACHABLE_SQLSTATES.has(err.code ?? '') || fromDbError(err).statusCode === 503;
}

/**
 * The environment's Db, clearing `onCommit` after every committed transaction: this instance's
 * own writes are seen by its next read at once, without waiting for their notification. With
 * metrics on it also reports each transaction's time and every failure (src/platform/db/observe.ts).
 */
export function environmentDb(db: Db, onCommit: () => void, observed: DbObservation | undefined): Db {
  const failed = observed?.failed;
  const watched = <T>(call: Promise<T>): Promise<T> => {
    if (failed) call.catch(failed);
    return call;
  };
  return {
    ...scopedAs(db),
    kind: db.kind,
    query: <R>(text: string, values?: readonly unknown[], options?: QueryOptions) => watched(db.query<R>(text, values, options)),
    exec: (sql) => watched(db.exec(sql)),
    async transaction(fn) {
      // Without metrics, `observed?.…` skips its call, arguments and all.
      const started = observed ? performance.now() : 0;
      try {
        const result = await db.transaction(fn);
        onCommit();
        return result;
      } catch (err) {
        observed?.failed(err);
        throw err;
      } finally {
        observed?.transaction((performance.now() - started) / 1000);
      }
    },
    listen: (channel, listener) => db.listen(channel, listener),
    direct: (fn) => db.direct(fn),
    resetStatements: () => db.resetStatements(),
    reconnect: () => db.reconnect(),
    poolStats: () => db.poolStats(),
    close: () => db.close(),
  };
}

export function isPglite(db: Db): db is PgliteDb {
  return db.kind === 'pglite' && typeof (db as Partial<PgliteDb>).snapshot === 'function';
}
