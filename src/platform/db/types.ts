// The data-access contract every domain codes against. Two adapters implement it (PGlite, pg);
// both return the same shapes: int8 as number, timestamptz as ISO-8601 strings, jsonb as values.

export type Row = Record<string, unknown>;

export interface QueryResult<R = Row> {
  rows: R[];
  /** Rows returned by a SELECT, or rows changed by INSERT/UPDATE/DELETE. */
  rowCount: number;
}

export interface QueryOptions {
  /**
   * A prepared statement's name, for hot statements whose planning costs more than running them
   * (the bot queues): PostgreSQL plans it once per connection. One name, one text, always.
   */
  name?: string;
}

export interface Queryable {
  /** One parameterised statement. jsonb parameters go in as `JSON.stringify(value)` with a `::jsonb` cast. */
  query<R = Row>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<R>>;
  /** Several statements without parameters (migrations, seeds). */
  exec(sql: string): Promise<void>;
}

declare const inTransaction: unique symbol;

/** The handle inside `db.transaction`. Branded so that a Db can never be passed where a Tx is required. */
export interface Tx extends Queryable {
  readonly [inTransaction]: true;
  /** A nested unit of work on a savepoint: it rolls back alone when `fn` throws. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
}

export type StoreKind = 'pglite' | 'postgres';

/** What a LISTEN subscriber hears: payloads, and whether it may currently rely on hearing them. */
export interface Listener {
  onNotify(payload: string): void;
  /** The listening connection is up (again): from now on every notification arrives. */
  onReady?(): void;
  /** The listening connection was lost: notifications may have been missed until onReady. */
  onLost?(): void;
}

/** The connections behind a Db, for the metrics (pg Pool's counts; PGlite is one connection). */
export interface PoolStats {
  /** Connections open. */
  size: number;
  /** Open and not in use. */
  idle: number;
  /** Calls waiting for a connection. */
  waiting: number;
}

export interface Db extends Queryable {
  readonly kind: StoreKind;
  /**
   * Runs `fn` in one transaction: commit when it resolves, rollback when it throws. Inside `fn`
   * every statement must go through `tx`; calling this Db directly there fails loudly.
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** LISTEN on a channel (PostgreSQL: a dedicated connection, re-established when lost). */
  listen(channel: string, listener: Listener): Promise<() => Promise<void>>;
  /**
   * Runs `fn` on PostgreSQL itself rather than through a connection pooler (<ENV>_DATABASE_DIRECT_URL),
   * on one session of its own without a statement timeout: migrations and verify-audit. On PGlite
   * `fn` gets this Db (one connection already).
   */
  direct<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /**
   * Forgets the statements prepared on pooled connections, after a schema change made out of band
   * (a prepared `returning *` whose table gained a column fails with "cached plan must not change
   * result type"). PostgreSQL: each pooled connection is replaced at its next checkout. PGlite
   * prepares no named statements: nothing to forget.
   */
  resetStatements(): void;
  /**
   * The server answered that it does not take writes (a primary fenced read-only, its connections
   * kept open): every pooled connection is replaced at its next checkout, and new ones choose their
   * host again, so a multi-host URL finds the new primary without a write failing first. A
   * single-host URL, and PGlite: nothing to do.
   */
  reconnect(): void;
  poolStats(): PoolStats;
  close(): Promise<void>;
}

/** A driver failure in one shape, whichever adapter raised it. */
export class DbError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail: string | undefined,
    readonly constraint: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DbError';
  }

  static from(err: unknown): DbError {
    if (err instanceof DbError) return err;
    const e = (err ?? {}) as { message?: string; code?: unknown; detail?: string; constraint?: string };
    const code = typeof e.code === 'string' ? e.code : undefined;
    return new DbError(e.message ?? String(err), code, e.detail || undefined, e.constraint || undefined, { cause: err });
  }
}
