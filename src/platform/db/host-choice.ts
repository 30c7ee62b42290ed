// Choosing the server of a new connection among a multi-host URL's hosts (issue 30), as libpq's
// target_session_attrs does, on top of `pg`: connect to a host, ask once what it is, keep the
// connection only when it is the kind wanted, else try the next host. The pool (postgres.ts) and
// the listening connection (listener.ts) share this; a single-host URL without the parameter
// never comes here (no extra round trip: the path stays what it was).
import pg from 'pg';
import { HostOrder, type ConnectionTarget, type SessionAttrs } from './connection-url.js';
import { DbError } from './types.js';

/** SQLSTATE 25006 read_only_sql_transaction: what a write on a read-only server gets. */
export const READ_ONLY = '25006';
/** A statement refused because the server does not take writes or is shutting down (57P01-57P03). */
const REFUSALS = new Set([READ_ONLY, '57P01', '57P02', '57P03']);
// pg's own, and pg-pool's "timeout exceeded when trying to connect" (DATABASE_CONNECT_TIMEOUT_MS).
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|Client was closed)|timeout expired|timeout exceeded when trying to connect/;

/** A driver error as a DbError; `pg`'s own lost-connection errors (no SQLSTATE) become 08006. */
export function toDbError(err: unknown): DbError {
  if (err instanceof DbError) return err;
  const e = err as { code?: unknown; message?: unknown };
  if (!(err instanceof pg.DatabaseError) && typeof e.code !== 'string' && typeof e.message === 'string' && CONNECTION_LOST.test(e.message)) {
    return new DbError(e.message, '08006', undefined, undefined, { cause: err });
  }
  return DbError.from(err);
}

/**
 * The server cannot take this connection's work any more: it refused a write as read-only, or it
 * is shutting down, or the connection is gone. The connection is dropped and the next one chooses
 * its host again.
 */
export function isRefusal(err: DbError): boolean {
  const code = err.code ?? '';
  return REFUSALS.has(code) || code.startsWith('08');
}

/** Why a connected server is not the kind wanted, or undefined when it is. */
export async function unsuitable(client: pg.ClientBase, attrs: SessionAttrs): Promise<string | undefined> {
  if (attrs === 'any') return undefined;
  const { rows } = await client.query<{ recovery: boolean; read_only: string }>(
    "select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') as read_only",
  );
  const { recovery, read_only: readOnly } = rows[0]!;
  switch (attrs) {
    case 'read-write':
      return readOnly === 'on' ? (recovery ? 'in recovery (a standby)' : 'read-only (default_transaction_read_only)') : undefined;
    case 'primary':
      return recovery ? 'in recovery (a standby)' : undefined;
    case 'read-only':
      return readOnly === 'on' ? undefined : 'accepts writes';
    case 'standby':
      return recovery ? undefined : 'not in recovery';
  }
}

/** A host that answered but was not the kind wanted: its reason, kept on the error. */
export class UnsuitableHost extends Error {
  constructor(
    readonly host: number,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * After every host was tried for one connection: 25006 when one of them answered but none was the
 * kind wanted (a failover under way: nothing writable yet), else the last connection failure.
 */
export function noHost(target: ConnectionTarget, failures: { host: number; err: unknown }[]): DbError {
  const names = failures.map(({ host, err }) => `${target.hosts[host] ? `${target.hosts[host]!.host}:${target.hosts[host]!.port}` : target.name}: ${(err as Error).message}`);
  const answered = failures.some(({ err }) => err instanceof UnsuitableHost);
  if (!answered) {
    const last = toDbError(failures[failures.length - 1]!.err);
    if (failures.length === 1) return last;
    return new DbError(`no host answered (${names.join('; ')})`, last.code ?? '08001', undefined, undefined, { cause: last });
  }
  return new DbError(`no ${target.attrs} server among ${target.name} (${names.join('; ')})`, READ_ONLY, undefined, undefined);
}

/**
 * A connected `pg.Client` on a host of the kind wanted, trying the hosts in `order`'s walk (the
 * listening connection's way; the pool has its own, on pooled clients).
 */
export async function connectSuitable(
  target: ConnectionTarget,
  order: HostOrder,
  config: pg.ClientConfig,
  /** Listeners to put on each client before it connects (its error listener first of all). */
  prepare: (client: pg.Client) => void,
): Promise<{ client: pg.Client; host: number }> {
  const failures: { host: number; err: unknown }[] = [];
  for (const host of order.walk()) {
    const client = new pg.Client({ ...config, connectionString: target.urls[host] });
    prepare(client);
    try {
      await client.connect();
      const why = await unsuitable(client, target.attrs);
      if (why !== undefined) throw new UnsuitableHost(host, why);
      order.found(host);
      return { client, host };
    } catch (err) {
      order.lost(host, !(err instanceof UnsuitableHost));
      failures.push({ host, err });
      void client.end().catch(() => undefined);
    }
  }
  throw noHost(target, failures);
}
