// LISTEN on PostgreSQL needs a connection of its own that stays open (a pooled one would be
// handed back). One per Db, opened on the first listen(), carrying every channel; when it drops,
// subscribers hear onLost, and it reconnects with backoff, LISTENs again and reports onReady.
// With a multi-host URL it connects, as the pool does, to a host of the kind wanted (the writable
// primary: NOTIFY is sent there), so after a failover it follows the new primary.
import pg from 'pg';
import { HostOrder, parseConnectionUrl, type ConnectionTarget } from './connection-url.js';
import { connectSuitable } from './host-choice.js';
import { cut } from './liveness.js';
import type { Listener } from './types.js';

/** What the listening connection needs of the adapter's options (postgres.ts passes its own). */
export interface ListenerOptions {
  connectionString: string;
  /** The URL taken apart (postgres.ts has done it already). */
  target?: ConnectionTarget;
  applicationName?: string;
  /** DATABASE_CONNECT_TIMEOUT_MS: a connection attempt that takes longer fails (and is retried). */
  connectionTimeoutMillis?: number;
  onIdleError?: (err: Error) => void;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
const BACKOFF_MS = [250, 1000, 2000, 5000];

export function createListenerConnection(options: ListenerOptions) {
  const channels = new Map<string, Set<Listener>>();
  let client: pg.Client | undefined;
  /** The host (index in the URL) the listening connection is on. */
  let host = 0;
  let connecting: Promise<void> | undefined;
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;

  const everyone = () => [...channels.values()].flatMap((set) => [...set]);
  const target = options.target ?? parseConnectionUrl(options.connectionString);
  const order = new HostOrder(target.urls.length);
  const config: pg.ClientConfig = {
    application_name: `${options.applicationName ?? 'case-management-service'}:listen`,
    // An idle connection whose server went away silently is found out by keepalives.
    keepAlive: true,
    keepAliveInitialDelayMillis: 5_000,
    ...(options.connectionTimeoutMillis ? { connectionTimeoutMillis: options.connectionTimeoutMillis } : {}),
  };
  const prepare = (next: pg.Client) => {
    next.on('notification', (message) => channels.get(message.channel)?.forEach((l) => l.onNotify(message.payload ?? '')));
    next.on('error', (err) => options.onIdleError?.(err));
    next.on('end', () => {
      if (client !== next) return;
      client = undefined;
      everyone().forEach((l) => l.onLost?.());
      scheduleReconnect();
    });
  };

  async function connect(): Promise<void> {
    let next: pg.Client;
    let on = 0;
    if (target.urls.length > 1 || target.attrs !== 'any') {
      ({ client: next, host: on } = await connectSuitable(target, order, config, prepare));
    } else {
      next = new pg.Client({ ...config, connectionString: options.connectionString });
      prepare(next);
      await next.connect();
    }
    for (const channel of channels.keys()) await next.query(`listen ${channel}`);
    if (closed) return void (await next.end());
    client = next;
    host = on;
    failures = 0;
    everyone().forEach((l) => l.onReady?.());
  }

  function scheduleReconnect(): void {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((err: Error) => {
        failures++;
        options.onIdleError?.(err);
        scheduleReconnect();
      });
    }, BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)]);
    retry.unref();
  }

  return {
    async listen(channel: string, listener: Listener): Promise<() => Promise<void>> {
      if (!CHANNEL.test(channel)) throw new Error(`Not a channel name: ${channel}`);
      const isNew = !channels.has(channel);
      channels.set(channel, (channels.get(channel) ?? new Set()).add(listener));
      try {
        if (!client) {
          connecting ??= connect().finally(() => (connecting = undefined));
          await connecting; // its LISTENs include this channel, and it calls onReady
        } else {
          if (isNew) await client.query(`listen ${channel}`);
          listener.onReady?.();
        }
      } catch (err) {
        // Not listening yet: the subscriber hears onReady once a reconnect succeeds.
        options.onIdleError?.(err as Error);
        scheduleReconnect();
      }
      return async () => {
        channels.get(channel)?.delete(listener);
        if (channels.get(channel)?.size === 0) {
          channels.delete(channel);
          await client?.query(`unlisten ${channel}`).catch(() => undefined);
        }
      };
    },
    /**
     * The pool found the writable server on another host (a failover, a primary fenced read-only
     * with its connections kept open): NOTIFY is sent there now, so the listening connection moves
     * too, without waiting for its own connection to fail (which a fenced server never does).
     */
    follow(writable: number): void {
      if (client !== undefined && host !== writable) cut(client);
    },
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retry);
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}
