// The environment's Db as a request with an Idempotency-Key sees it (idempotency.ts): every
// statement in the request's one transaction. The handler's own transactions are savepoints in it,
// and so is each lone statement, so that one refused (a unique violation answered 409) leaves the
// transaction usable for the answer that is stored with it.
import type { Db, Tx } from '../db/types.js';

export function keyedDb(environmentDb: Db, tx: Tx): Db {
  const db: Db = {
    kind: environmentDb.kind,
    query: (text, values, options) => tx.transaction((t) => t.query(text, values, options)),
    exec: (sql) => tx.transaction((t) => t.exec(sql)),
    transaction: (fn) => tx.transaction(fn),
    listen: (channel, listener) => environmentDb.listen(channel, listener),
    // Within the request's transaction: a session of its own would wait for it.
    direct: (fn) => fn(db),
    resetStatements: () => environmentDb.resetStatements(),
    reconnect: () => environmentDb.reconnect(),
    poolStats: () => environmentDb.poolStats(),
    // The environment's, not the request's to close.
    close: async () => undefined,
  };
  return db;
}
