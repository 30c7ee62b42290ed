// Embedded adapter: PGlite (PostgreSQL in WASM, in-process). See DESIGN.md for its pitfalls; each
// is handled here: the folder lock, the in-transaction outer call, int8/jsonb/date shapes, exec().
import { mkdirSync } from 'node:fs';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { lockDataFolder, type FolderLock } from './lock-file.js';
import { TYPE_PARSERS } from './parsers.js';
import { assertOutsideTransaction, createTx, runInTransactionScope } from './transaction-guard.js';
import { DbError, type Db, type QueryResult, type Row } from './types.js';

export interface PgliteOptions {
  /** A folder to persist into, or undefined for an in-memory database. */
  dataDir?: string | undefined;
  /** A tarball from `dumpDataDir()` to start from (tests restore a migrated snapshot). */
  loadDataDir?: Blob | undefined;
  /** The caller already holds the folder's lock (restore, which keeps it across open and swap). */
  lockHeld?: boolean;
  /** initdb's options for a new cluster (the tests' snapshot: `--wal-segsize=1`, see test/helpers). */
  initDbStartParams?: string[] | undefined;
}

/** A copy of the whole data folder as it was between two transactions (backups, src/backup). */
export interface PgliteSnapshot {
  /** The data folder as a gzipped tar: PGlite's own `dumpDataDir('gzip')`. */
  tarball: Blob;
  /** The latest migration recorded in it (null: none). */
  schemaVersion: number | null;
  /** PostgreSQL's `server_version_num`: a data folder opens only on the same major version. */
  postgresVersionNum: number;
}

export type PgliteDb = Db & { dump(): Promise<Blob>; snapshot(): Promise<PgliteSnapshot> };

// shared_buffers=16MB: measured 218 MB RSS for two environments instead of 471 MB with defaults.
const START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

export async function openPglite(options: PgliteOptions = {}): Promise<PgliteDb> {
  let lock: FolderLock | undefined;
  if (options.dataDir) {
    if (!options.lockHeld) lock = lockDataFolder(options.dataDir);
    mkdirSync(options.dataDir, { recursive: true });
  }
  let pg: PGlite;
  try {
    pg = await PGlite.create({
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      ...(options.initDbStartParams ? { initDbStartParams: options.initDbStartParams } : {}),
      extensions: { pg_trgm },
      parsers: TYPE_PARSERS,
      startParams: START_PARAMS,
    });
  } catch (err) {
    lock?.release();
    throw err;
  }

  const run = async (target: PGlite | Transaction, text: string, values?: readonly unknown[]) => {
    try {
      const result = await target.query<Row>(text, values as unknown[] | undefined);
      // PGlite reports affectedRows 0 for a SELECT: count returned rows there, changed rows elsewhere.
      return { rows: result.rows, rowCount: Math.max(result.affectedRows ?? 0, result.rows.length) };
    } catch (err) {
      throw DbError.from(err);
    }
  };
  const execOn = async (target: PGlite | Transaction, sql: string) => {
    try {
      await target.exec(sql);
    } catch (err) {
      throw DbError.from(err);
    }
  };

  // PGlite is one connection that runs one call at a time: the pool the metrics see is of size 1,
  // busy while any call is in flight, and the calls beyond the first wait for it.
  let active = 0;
  const inFlight = async <T>(call: Promise<T>): Promise<T> => {
    active++;
    try {
      return await call;
    } finally {
      active--;
    }
  };

  const db: PgliteDb = {
    kind: 'pglite',
    // QueryOptions.name is not used here: PGlite has no per-connection statement cache to fill.
    async query<R>(text: string, values?: readonly unknown[]) {
      assertOutsideTransaction(db);
      return (await inFlight(run(pg, text, values))) as QueryResult<R>;
    },
    async exec(sql) {
      assertOutsideTransaction(db);
      await inFlight(execOn(pg, sql));
    },
    async transaction(fn) {
      assertOutsideTransaction(db);
      let ran = false;
      try {
        return await inFlight(
          pg.transaction(async (ptx) => {
            const { tx, end } = createTx((text, values) => run(ptx, text, values), (sql) => execOn(ptx, sql));
            try {
              const result = await runInTransactionScope(db, () => fn(tx));
              ran = true;
              return result;
            } finally {
              end();
            }
          }),
        );
      } catch (err) {
        // `fn` returned, so what failed is PGlite's COMMIT (a deferred constraint): a database
        // error like any statement's, in the one shape the error handler maps. What `fn` threw
        // is thrown as it is.
        if (ran) throw DbError.from(err);
        throw err;
      }
    },
    async listen(channel, listener) {
      // One process, one session: notifications arrive before the committing call returns.
      const unlisten = await pg.listen(channel, (payload) => listener.onNotify(payload));
      listener.onReady?.();
      return () => unlisten();
    },
    // Every query is parsed unnamed (see query above): no prepared statement outlives its call.
    resetStatements: () => undefined,
    reconnect: () => undefined,
    direct: (fn) => fn(db),
    poolStats: () => ({ size: 1, idle: active === 0 ? 1 : 0, waiting: Math.max(0, active - 1) }),
    async close() {
      try {
        if (!pg.closed) await pg.close();
      } finally {
        lock?.release();
      }
    },
    dump: () => pg.dumpDataDir('none'),
    // PGlite runs one transaction (or lone statement) at a time, each holding its transaction
    // mutex throughout. Holding it here while the folder is read means no other transaction is
    // in flight: the copy is the state after the last commit, never half of one. This reading
    // transaction assigns no transaction id, so it leaves nothing behind in the copy.
    async snapshot() {
      assertOutsideTransaction(db);
      try {
        return await pg.transaction(async (ptx) => {
          const { rows } = await ptx.query<{ server: number; migrated: boolean }>(
            `select current_setting('server_version_num')::int as server, to_regclass('schema_migrations') is not null as migrated`,
          );
          const { server, migrated } = rows[0]!;
          const version = migrated ? (await ptx.query<{ v: number | null }>('select max(version) as v from schema_migrations')).rows[0]!.v : null;
          const tarball = await pg.dumpDataDir('gzip');
          return { tarball, schemaVersion: version, postgresVersionNum: server };
        });
      } catch (err) {
        throw DbError.from(err);
      }
    },
  };
  return db;
}
