// COMMIT on PostgreSQL as an acknowledgement (issue 40). With a synchronous standby a commit returns
// once the standby has it; PostgreSQL lifts statement_timeout for COMMIT, so one waiting for a
// standby that has gone away waits for good. Past the statement timeout it is cancelled from a
// connection of its own, as an operator's pg_cancel_backend would be: the server then ends the wait
// with a WARNING and reports the commit done. Committed on the primary but not on the standby, it
// is not an acknowledgement to the client either: SQLSTATE 08007 (a 503, which the client retries,
// and finds the change). A connection a cancel was sent to is not used again: the cancel could
// otherwise land on its next statement.
import pg from 'pg';
import { DbError } from './types.js';

/** The WARNING of a commit whose wait for the synchronous standby was cancelled. */
const SYNC_WAIT_CANCELLED = /canceling (the )?wait for synchronous replication/i;

/** SQLSTATE 08007 transaction_resolution_unknown. */
export const RESOLUTION_UNKNOWN = '08007';

export interface CommitBound {
  /** DATABASE_STATEMENT_TIMEOUT_MS; undefined: the commit waits as long as the server does. */
  ms: number | undefined;
  /** The URL of the server the client is connected to (a cancel goes there). */
  url: string;
  connectTimeoutMs: number | undefined;
  applicationName: string;
  onError?: (err: Error) => void;
}

/**
 * Runs `commit` on `client`; throws 08007 when the standby did not acknowledge it. Returns whether
 * a cancel was sent, in which case the caller must destroy the connection.
 */
export async function acknowledgedCommit(client: pg.ClientBase, commit: () => Promise<unknown>, bound: CommitBound): Promise<{ cancelSent: boolean }> {
  let unacknowledged: string | undefined;
  let cancelSent = false;
  const onNotice = (notice: { message?: string }) => {
    if (SYNC_WAIT_CANCELLED.test(notice.message ?? '')) unacknowledged = notice.message;
  };
  client.on('notice', onNotice);
  const timer = bound.ms === undefined ? undefined : setTimeout(() => {
    cancelSent = true;
    void cancelBackend(client, bound);
  }, bound.ms);
  try {
    await commit();
  } finally {
    clearTimeout(timer);
    client.off('notice', onNotice);
  }
  if (unacknowledged !== undefined) throw new DbError(`commit not acknowledged by the synchronous standby: ${unacknowledged}`, RESOLUTION_UNKNOWN, undefined, undefined);
  return { cancelSent };
}

async function cancelBackend(client: pg.ClientBase, bound: CommitBound): Promise<void> {
  const canceller = new pg.Client({ connectionString: bound.url, connectionTimeoutMillis: bound.connectTimeoutMs, application_name: `${bound.applicationName}:cancel` });
  canceller.on('error', () => undefined);
  try {
    await canceller.connect();
    // Only while that process still runs a COMMIT: the connection is destroyed once its commit ends,
    // and its process id could by then be another session's.
    await canceller.query(
      "select pg_cancel_backend(pid) from pg_stat_activity where pid = $1::int and state = 'active' and query ilike 'commit%'",
      [(client as unknown as { processID: number }).processID],
    );
  } catch (err) {
    bound.onError?.(err as Error);
  } finally {
    void canceller.end().catch(() => undefined);
  }
}
