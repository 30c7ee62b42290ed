// PostgreSQL adapter on a `pg` Pool. Transactions hold one pooled client from BEGIN to COMMIT.
// Unlike PGlite, a stray call to the outer handle inside a transaction cannot hang here, so this
// adapter does without the AsyncLocalStorage guard (on Node 20 it costs every request's promises);
// the same code runs on PGlite in the test suite, where the guard catches the mistake.
//
// A multi-host URL (issue 30) is followed here: each new pooled connection goes to a host of the
// kind its target_session_attrs asks for (host-choice.ts), and a statement refused because the
// server is read-only or shutting down drops its connection (503) and sends the next one through
// the hosts again. A single-host URL without the parameter connects as it always did.
import pg from 'pg';
import { HostOrder, parseConnectionUrl } from './connection-url.js';
import { isRefusal, noHost, toDbError, UnsuitableHost, unsuitable } from './host-choice.js';
import { acknowledgedCommit } from './commit.js';
import { Liveness } from './liveness.js';
import { TYPE_PARSERS } from './parsers.js';
import { createListenerConnection } from './listener.js';
import { createTx } from './transaction-guard.js';
import { Turns } from './turns.js';
import type { Db, QueryOptions, QueryResult, Row } from './types.js';

export { Turns } from './turns.js';

export interface PostgresOptions {
  /** The pool's server: PostgreSQL itself, or a connection pooler in front of it. */
  connectionString: string;
  /**
   * PostgreSQL itself when connectionString is a transaction-mode pooler (<ENV>_DATABASE_DIRECT_URL):
   * what needs a session of its own goes there (the listening connection, and `direct()`: migrations,
   * verify-audit). Unset or equal to connectionString: the pool's server is PostgreSQL itself.
   */
  directConnectionString?: string;
  /** Named prepared statements (QueryOptions.name); false for a pooler that cannot carry them. */
  preparedStatements?: boolean;
  max?: number;
  applicationName?: string;
  /**
   * How long a new connection may take (pg's default: forever), and how long a statement runs
   * before its server is asked whether it answers at all (liveness.ts): DATABASE_CONNECT_TIMEOUT_MS.
   */
  connectionTimeoutMillis?: number;
  /**
   * statement_timeout and (twice it) idle_in_transaction_session_timeout of every session, sent
   * with the connection (DATABASE_STATEMENT_TIMEOUT_MS); unset: the server's own. Not through a
   * pooler, which cannot carry them: there they are the role's settings (docs/postgresql.md).
   * `direct()` sessions (migrations, verify-audit) go without.
   */
  statementTimeoutMillis?: number;
  onIdleError?: (err: Error) => void;
  /** A multi-host URL's new connections go to another host than before (`host:port`). */
  onHostChosen?: (host: string) => void;
}

const types = {
  getTypeParser: ((oid: number, format?: string) =>
    TYPE_PARSERS[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** The host a pooled client was opened on (its index in the URL), for a multi-host URL. */
const HOST = Symbol('host');
type HostedClient = pg.PoolClient & { [HOST]?: number };

/**
 * Short indexed statements only: JIT compilation (hundreds of milliseconds) would be set off by the
 * cost estimates of per-row index probes (the visibility model's), not by real work. Sent as a
 * startup parameter to PostgreSQL itself; a transaction-mode pooler refuses it (PgBouncer before
 * 1.20 knows no `options`) and could not apply it to the server connections it shares anyway:
 * behind one, `jit = off` is the role's or the database's setting (docs/postgresql.md).
 */
export const JIT_OFF = '-c jit=off';

/** The session settings sent with each connection to PostgreSQL itself (JIT_OFF, the timeouts). */
export function startupOptions(statementTimeoutMs: number | undefined): string {
  if (statementTimeoutMs === undefined) return JIT_OFF;
  return `${JIT_OFF} -c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=${2 * statementTimeoutMs}`;
}

/** A pooler's refusal of the startup option (PgBouncer: "unsupported startup parameter: options"). */
const refusesStartupOption = (err: unknown) => /unsupported startup parameter: options/i.test(String((err as Error | undefined)?.message));

/** TCP keepalive idle of every connection. */
const KEEPALIVE_IDLE_MS = 5_000;

export function openPostgres(options: PostgresOptions): Db {
  const max = options.max ?? 10;
  const turns = new Turns(max);
  const direct = options.directConnectionString ?? options.connectionString;
  const pooled = direct !== options.connectionString;
  const prepared = options.preparedStatements ?? true;
  const target = parseConnectionUrl(options.connectionString);
  // Host choice only where the URL asks for it: several hosts, or a kind of server.
  const choosing = target.urls.length > 1 || target.attrs !== 'any';
  const order = new HostOrder(target.urls.length);
  /** The host the pool's next new client connects to (set by checkout just before pool.connect). */
  let nextHost = 0;
  /**
   * Whether new connections send JIT_OFF: not through a pooler the configuration names
   * (<ENV>_DATABASE_DIRECT_URL), and not once a server refused it: a URL that is a pooler without
   * saying so (a replica's behind PgBouncer, issue 40) would otherwise never connect at all. The
   * refused connection fails; the next one is made without the option.
   */
  let sendJitOff = !pooled;
  const sessionOptions = startupOptions(options.statementTimeoutMillis);
  class HostClient extends pg.Client {
    readonly [HOST]: number;
    constructor(config?: pg.ClientConfig) {
      const host = nextHost;
      // Keepalives with a short idle: a connection whose server went away without a word is
      // found out by the kernel instead of waiting on it for hours (two hours by default).
      super({ ...config, connectionString: target.urls[host], keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS, ...(sendJitOff ? { options: sessionOptions } : {}) });
      this[HOST] = host;
    }

    // pg-pool connects with a callback; a failure keeps the host it was for.
    override connect(callback?: (...args: any[]) => void): any {
      if (!callback) return super.connect();
      return super.connect((err: Error) => {
        if (err) (err as Error & { [HOST]?: number })[HOST] = this[HOST];
        if (err && refusesStartupOption(err)) sendJitOff = false;
        callback(err);
      });
    }
  }
  const pool = new pg.Pool({
    connectionString: target.urls[0],
    Client: HostClient,
    ...(choosing
      ? {
          // Once per new connection: is this server the kind wanted? If not, the connection is
          // closed and checkout tries the next host.
          onConnect: async (client: pg.ClientBase) => {
            const why = await unsuitable(client, target.attrs);
            if (why !== undefined) throw new UnsuitableHost((client as HostedClient)[HOST] ?? 0, why);
          },
        }
      : {}),
    max,
    application_name: options.applicationName ?? 'case-management-service',
    ...(options.connectionTimeoutMillis ? { connectionTimeoutMillis: options.connectionTimeoutMillis } : {}),
    types,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', (err) => options.onIdleError?.(err));

  // resetStatements(): every client remembers the generation it was opened in, and one opened
  // before the latest reset is destroyed at checkout, so the pool opens a fresh one in its place.
  // Replacing the connection rather than sending `deallocate all` on it keeps to pg's public API
  // (pg tracks what it prepared in a private per-connection map that would have to be cleared in
  // step) and resets everything else a session caches too. It costs one reconnect per pooled
  // connection after a reload, an operator's rare action.
  let generation = 0;
  const openedIn = new WeakMap<pg.PoolClient, number>();
  pool.on('connect', (client) => openedIn.set(client, generation));

  /**
   * A pooled client, trying the hosts in order for a new one: each host at most once, then 503
   * (DATABASE_UNAVAILABLE: no host answered, or 25006: none was writable yet).
   */
  const connect = async (): Promise<pg.PoolClient> => {
    if (!choosing) return pool.connect();
    const failures: { host: number; err: unknown }[] = [];
    for (const host of order.walk()) {
      nextHost = host;
      try {
        const client = (await pool.connect()) as HostedClient;
        const chosen = client[HOST] ?? host;
        if (order.current !== chosen) {
          order.found(chosen);
          options.onHostChosen?.(`${target.hosts[chosen]?.host}:${target.hosts[chosen]?.port}`);
          if (!pooled) listener.follow(chosen);
        }
        return client;
      } catch (err) {
        const failed = err instanceof UnsuitableHost ? err.host : ((err as { [HOST]?: number })[HOST] ?? host);
        order.lost(failed);
        failures.push({ host: failed, err });
      }
    }
    throw noHost(target, failures);
  };

  /** A connection for one statement or one transaction (`change`); give it back with checkin. */
  const checkout = async (change: boolean): Promise<pg.PoolClient> => {
    await turns.take(change);
    for (;;) {
      let client: pg.PoolClient;
      try {
        client = await connect();
      } catch (err) {
        turns.give();
        throw toDbError(err);
      }
      if (openedIn.get(client) === generation) return client;
      client.release(true);
    }
  };
  /**
   * A refused statement (read-only, shutting down, connection lost) destroys its connection, and
   * every other pooled one at its next checkout (they are on the same server); the next new
   * connection chooses its host again.
   */
  const refused = (client: pg.PoolClient, err: unknown): boolean => {
    if (!(err instanceof Error) || !isRefusal(toDbError(err))) return false;
    generation++;
    order.lost((client as HostedClient)[HOST] ?? 0);
    return true;
  };
  // A statement past the connect timeout has its server asked whether it answers (liveness.ts).
  const liveness = options.connectionTimeoutMillis
    ? new Liveness({
        urls: target.urls,
        timeoutMs: options.connectionTimeoutMillis,
        applicationName: options.applicationName ?? 'case-management-service',
        onHung: (host, err) => {
          generation++;
          order.lost(host, true);
          options.onIdleError?.(err);
        },
      })
    : undefined;
  const checkin = (client: pg.PoolClient, destroy?: Error) => {
    client.release(destroy);
    turns.give();
  };

  const run = async (target: pg.PoolClient, text: string, values?: readonly unknown[], options?: QueryOptions) => {
    const settled = liveness?.watch(target, (target as HostedClient)[HOST] ?? 0);
    try {
      // Without prepared statements a named query goes out as the unnamed statement: parsed and
      // planned each time, like any other, and valid on whichever server connection runs it.
      const result = options?.name && prepared
        ? await target.query<Row>({ name: options.name, text, values: values as unknown[] | undefined })
        : await target.query<Row>(text, values as unknown[] | undefined);
      return { rows: result.rows, rowCount: result.rowCount ?? result.rows.length };
    } catch (err) {
      throw toDbError(err);
    } finally {
      settled?.();
    }
  };

  // Several statements without parameters: pg answers with one result per statement.
  const execOn = async (target: pg.PoolClient, sql: string) => {
    const settled = liveness?.watch(target, (target as HostedClient)[HOST] ?? 0);
    try {
      await target.query(sql);
    } catch (err) {
      throw toDbError(err);
    } finally {
      settled?.();
    }
  };

  /** COMMIT as an acknowledgement (commit.ts); the statement timeout bounds it only on PostgreSQL itself. */
  const commit = (client: pg.PoolClient) =>
    acknowledgedCommit(client, () => run(client, 'commit'), {
      ms: sendJitOff ? options.statementTimeoutMillis : undefined,
      url: target.urls[(client as HostedClient)[HOST] ?? 0]!,
      connectTimeoutMs: options.connectionTimeoutMillis,
      applicationName: options.applicationName ?? 'case-management-service',
      onError: options.onIdleError,
    });

  /**
   * One call on a checked-out client, as `pool.query` does it: a client whose statement failed is
   * destroyed rather than reused, and while checked out its connection dropping rejects the call
   * instead of crashing the process (the pool's own error listener is off the client meanwhile).
   */
  const once = async <T>(use: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await checkout(false);
    const ignore = () => undefined;
    client.on('error', ignore);
    let failure: Error | undefined;
    try {
      return await use(client);
    } catch (err) {
      failure = err as Error;
      refused(client, err);
      throw err;
    } finally {
      client.off('error', ignore);
      checkin(client, failure);
    }
  };

  // Behind a pooler the listening connection goes to PostgreSQL itself (the direct URL, one host or several).
  const listener = createListenerConnection(pooled ? { ...options, connectionString: direct } : { ...options, target });
  let closing: Promise<void> | undefined;
  const db: Db = {
    kind: 'postgres',
    async query<R>(text: string, values?: readonly unknown[], options?: QueryOptions) {
      return (await once((client) => run(client, text, values, options))) as QueryResult<R>;
    },
    exec: (sql) => once((client) => execOn(client, sql)),
    async transaction(fn) {
      const client = await checkout(true);
      // As in `once`: a connection lost mid-transaction rejects its statements, it must not crash
      // the process through an 'error' event nobody listens to.
      const ignore = () => undefined;
      client.on('error', ignore);
      const { tx, end } = createTx((text, values, options) => run(client, text, values, options), (sql) => execOn(client, sql));
      let broken: Error | undefined;
      try {
        await run(client, 'begin');
        const result = await fn(tx);
        const { cancelSent } = await commit(client);
        if (cancelSent) broken = new Error('a cancel was sent to this connection: not reused');
        return result;
      } catch (err) {
        if (refused(client, err)) broken = err as Error;
        else await client.query('rollback').catch((rollbackErr: Error) => (broken = rollbackErr));
        throw err;
      } finally {
        end();
        client.off('error', ignore);
        // A client whose rollback failed is in an unknown state, one refused is on a server that
        // cannot take the work: destroy it rather than reuse it.
        checkin(client, broken);
      }
    },
    listen: (channel, subscriber) => listener.listen(channel, subscriber),
    // A connection of its own, opened for `fn` and closed after: migrations and verify-audit are
    // rare, and keeping one open would hold a server connection the pooler is there to save.
    async direct(fn) {
      // Always one session: a migration outside a transaction holds the migrations' lock on it
      // (migrate.ts), and its statements run without the pool's statement timeout.
      const session = openPostgres({ ...options, connectionString: direct, directConnectionString: undefined, statementTimeoutMillis: undefined, max: 1, applicationName: `${options.applicationName ?? 'case-management-service'}:direct` });
      try {
        return await fn(session);
      } finally {
        await session.close();
      }
    },
    resetStatements: () => {
      generation++;
    },
    // Only where there is another host to choose: on one host it would only churn the pool.
    reconnect: () => {
      if (choosing) generation++;
    },
    // Waiting: for a turn (the changes first, see Turns) and, past it, for pg's own checkout.
    poolStats: () => ({ size: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount + turns.waiting.changes + turns.waiting.reads }),
    close: () => (closing ??= Promise.all([listener.close(), pool.end()]).then(() => undefined)),
  };
  return db;
}
