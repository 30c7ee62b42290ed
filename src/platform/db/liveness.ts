// A server that stops answering without closing anything (a hung primary, a network partition that
// sends no resets: issue 40) holds every statement sent to it until the client gives up, and its
// own statement_timeout cannot fire. So a statement still running after the connect timeout has
// its server asked, on a connection of its own, whether it answers at all: `select 1` within the
// connect timeout. One that answers is only slow (statement_timeout ends it in its time); one
// that does not is hung: every connection the pool has on it is cut, their statements fail as a
// lost connection does (503), and the host is skipped by the next connections (HostOrder).
import type { Socket } from 'node:net';
import pg from 'pg';

/** A pooled client's socket: pg has no public way to drop a connection whose server does not answer. */
type WithStream = { connection?: { stream?: Socket } };

export interface LivenessOptions {
  /** Each host's URL, by index (a single-host URL: one). */
  urls: readonly string[];
  /** How long a statement runs before its server is asked, and how long the server has to answer. */
  timeoutMs: number;
  applicationName: string;
  /** The host did not answer: its connections were cut. */
  onHung: (host: number, err: Error) => void;
}

export class Liveness {
  /** The clients running a statement, by host. */
  private readonly busy = new Map<number, Set<pg.ClientBase>>();
  private readonly probing = new Set<number>();

  constructor(private readonly options: LivenessOptions) {}

  /** Watches one statement of `client` on `host`; call the result when it settles. */
  watch(client: pg.ClientBase, host: number): () => void {
    let clients = this.busy.get(host);
    if (!clients) this.busy.set(host, (clients = new Set()));
    clients.add(client);
    const timer = setTimeout(() => void this.probe(host), this.options.timeoutMs);
    timer.unref();
    return () => {
      clearTimeout(timer);
      clients.delete(client);
    };
  }

  /** One question at a time per host, however many statements wait on it. */
  private async probe(host: number): Promise<void> {
    if (this.probing.has(host)) return;
    this.probing.add(host);
    const { timeoutMs } = this.options;
    const client = new pg.Client({
      connectionString: this.options.urls[host],
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
      application_name: `${this.options.applicationName}:liveness`,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      void client.end().catch(() => undefined);
    } catch (err) {
      cut(client);
      // The server answered, if only to refuse (too many connections, starting up): it is there.
      if (err instanceof pg.DatabaseError) return;
      // A lost connection's SQLSTATE: the statements it cuts answer 503 and the pool drops the host.
      const hung = Object.assign(new Error(`the server did not answer within ${timeoutMs} ms (DATABASE_CONNECT_TIMEOUT_MS): ${(err as Error).message}`), { code: '08006' });
      for (const busy of this.busy.get(host) ?? []) cut(busy, hung);
      this.options.onHung(host, hung);
    } finally {
      this.probing.delete(host);
    }
  }
}

/**
 * Drops the connection at once, whatever its server does: its statement fails with "Connection
 * terminated unexpectedly" (or `reason`) and the client ends.
 */
export function cut(client: pg.ClientBase, reason?: Error): void {
  (client as unknown as WithStream).connection?.stream?.destroy(reason);
}
