// The environment's Db as a request with an Idempotency-Key sees it (idempotency.ts): every
// statement in the request's one transaction, which the first of them opens (`open`: the key is
// looked up first, in it). The handler's transactions run in it as they are, and so do its lone
// statements (a savepoint around each would cost two round trips more): one that fails, or a
// transaction of the handler that throws, makes `failed()` true, and the request's changes are all
// rolled back while its answer (a refusal) is kept on its own. Transactions nested in the
// handler's are savepoints, as always.
import type { Db, Tx } from '../db/types.js';

export function keyedDb(environmentDb: Db, open: () => Promise<Tx>): { db: Db; failed(): boolean } {
  let failed = false;
  const noting = <T>(run: Promise<T>): Promise<T> =>
    run.catch((err: unknown) => {
      failed = true;
      throw err;
    });
  const db: Db = {
    kind: environmentDb.kind,
    query: (text, values, options) => noting(open().then((tx) => tx.query(text, values, options))),
    exec: (sql) => noting(open().then((tx) => tx.exec(sql))),
    transaction: (fn) => noting(open().then(fn)),
    listen: (channel, listener) => environmentDb.listen(channel, listener),
    // Within the request's transaction: a session of its own would wait for it.
    direct: (fn) => fn(db),
    resetStatements: () => environmentDb.resetStatements(),
    reconnect: () => environmentDb.reconnect(),
    poolStats: () => environmentDb.poolStats(),
    // The environment's, not the request's to close.
    close: async () => undefined,
  };
  return { db, failed: () => failed };
}
