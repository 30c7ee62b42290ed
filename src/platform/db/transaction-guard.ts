// Transaction handles for both adapters, and the PGlite guard: there a statement sent to the outer
// handle from inside a transaction waits for that same transaction and hangs the instance for
// good. AsyncLocalStorage tells that call apart from a concurrent request's (which may simply
// wait), so the mistake fails at once instead.
import { AsyncLocalStorage } from 'node:async_hooks';
import { DbError, type QueryOptions, type QueryResult, type Row, type Tx } from './types.js';

const openTransactions = new AsyncLocalStorage<ReadonlySet<object>>();
let openCount = 0;

export async function runInTransactionScope<T>(owner: object, fn: () => Promise<T>): Promise<T> {
  const outer = openTransactions.getStore();
  openCount++;
  try {
    return await openTransactions.run(new Set([...(outer ?? []), owner]), fn);
  } finally {
    // On Node 20 an enabled AsyncLocalStorage puts hooks on every promise of every request
    // (measured: a quarter of a light request's cost). Nothing needs the store once no
    // transaction is open, so the storage is switched off until the next one starts.
    if (--openCount === 0) openTransactions.disable();
  }
}

/**
 * Runs `fn` outside every transaction's scope: work that follows a transaction's commit but is
 * reached from inside its callback (a keyed request's after-commit work, idempotency.ts), where
 * the guard would otherwise take a statement to the outer handle for a mistake.
 */
export function outsideTransactionScope<T>(fn: () => T): T {
  return openTransactions.exit(fn);
}

const OWNER = Symbol('transaction scope owner');
/** The Db whose transactions the guard knows: a wrapper's (environment-db.ts) inner one. */
export const scopeOwnerOf = (db: object): object => (db as { [OWNER]?: object })[OWNER] ?? db;
/** Spread into a Db that wraps `inner`: its scope is the inner Db's. */
export const scopedAs = (inner: object): Record<symbol, object> => ({ [OWNER]: scopeOwnerOf(inner) });

export function assertOutsideTransaction(owner: object): void {
  if (openTransactions.getStore()?.has(owner)) {
    throw new DbError('db.query called inside db.transaction: use the tx handle passed to the callback', undefined, undefined, undefined);
  }
}

type RawQuery = (text: string, values?: readonly unknown[], options?: QueryOptions) => Promise<QueryResult<Row>>;

/** Wraps a driver's transaction handle: refuses use after the transaction ended, nests on savepoints. */
export function createTx(query: RawQuery, exec: (sql: string) => Promise<void>): { tx: Tx; end(): void } {
  let ended = false;
  let savepoints = 0;
  const guard = () => {
    if (ended) throw new DbError('transaction already finished: a statement outlived its transaction', undefined, undefined, undefined);
  };
  const tx = {
    async query<R>(text: string, values?: readonly unknown[], options?: QueryOptions) {
      guard();
      return (await query(text, values, options)) as QueryResult<R>;
    },
    async exec(sql: string) {
      guard();
      await exec(sql);
    },
    async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      guard();
      const name = `sp_${++savepoints}`;
      await query(`savepoint ${name}`);
      try {
        const result = await fn(tx);
        await query(`release savepoint ${name}`);
        return result;
      } catch (err) {
        await query(`rollback to savepoint ${name}`);
        throw err;
      }
    },
  } as Tx;
  return { tx, end: () => (ended = true) };
}
