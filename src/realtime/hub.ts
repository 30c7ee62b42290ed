// The built-in realtime hub (issue 12; DESIGN.md "Integrations: Realtime"): the server side of
// Supabase Realtime's private broadcast channels, enough for an unmodified @supabase/realtime-js.
// A connection joins `realtime:training:user:<chat_id>` (that user only) or
// `realtime:training:session:<id>` (members only) with the JWT from /training/realtime-token;
// the hub then forwards the broadcasts of that topic. Channels are server-sent only. A channel
// whose token expires without a refresh is closed as Supabase closes it: a `system` error, then
// `phx_close`. Presence is not offered (no presence_state is sent; a track is refused) and
// postgres_changes bindings are refused at join (docs/decisions.md).
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { EnvironmentName } from '../config.js';
import type { Environments } from '../platform/environments.js';
import { decode, encode, encodeBroadcast, type Message, type Version } from './protocol.js';
import { verifyToken } from './tokens.js';

/** Per connection: a bucket of this many frames, refilled at RATE_PER_SECOND; past it frames are dropped. */
export const RATE_BURST = 100;
export const RATE_PER_SECOND = 20;
/** Dropped frames beyond which a connection is closed (1008): it is not a client that backs off. */
export const DROPS_BEFORE_CLOSE = 200;
/** Largest frame accepted (ws closes the connection with 1009 beyond it). */
export const MAX_FRAME_BYTES = 64 * 1024;
/** A connection that sends nothing, not even a heartbeat (every 25 s), for this long is closed. */
export const IDLE_TIMEOUT_MS = 60_000;
/** A subscriber this far behind (bytes queued on its socket) misses broadcasts rather than growing memory. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/**
 * A connection holding no channel this long (none joined since it opened, or since its last one
 * closed) is closed (1008): heartbeats alone do not keep a socket, and with it a connection slot.
 */
export const JOIN_TIMEOUT_MS = 30_000;

export interface HubOptions {
  /** JOIN_TIMEOUT_MS unless given (the tests shorten it). */
  joinTimeoutMs?: number;
}

const TOPIC_PREFIX = 'realtime:';
const USER_TOPIC = /^training:user:([0-9]{1,20})$/;
const SESSION_TOPIC = /^training:session:([1-9][0-9]{0,15})$/;

interface Channel {
  topic: string;
  joinRef: string | null;
  sub: string;
  /** Closes the channel when its token expires; replaced by each refresh. */
  expiry?: NodeJS.Timeout;
}

interface Connection {
  ws: WebSocket;
  version: Version;
  environment: EnvironmentName;
  /** The socket's `apikey`: a join without a token of its own is judged by it, as Supabase does. */
  apikey: string | undefined;
  channels: Map<string, Channel>;
  tokens: number;
  refilledAt: number;
  dropped: number;
  lastSeen: number;
  /** Frames are handled one after another (a join's authorisation is asynchronous). */
  queue: Promise<void>;
  /** Closes the connection while it holds no channel (JOIN_TIMEOUT_MS). */
  unjoined?: NodeJS.Timeout;
}

export interface HubStats {
  connections: number;
  channels: number;
  delivered: number;
  refused_joins: number;
  dropped_frames: number;
  slow_skips: number;
}

const isTrue = (v: unknown) => v === true || v === 'true';

export class RealtimeHub {
  private readonly connections = new Set<Connection>();
  private readonly subscribers = new Map<string, Set<Connection>>();
  private readonly idleTimer: NodeJS.Timeout;
  private counters = { delivered: 0, refused_joins: 0, dropped_frames: 0, slow_skips: 0 };
  private readonly joinTimeoutMs: number;

  constructor(
    private readonly environments: Environments,
    private readonly log: Logger,
    options: HubOptions = {},
  ) {
    this.joinTimeoutMs = options.joinTimeoutMs ?? JOIN_TIMEOUT_MS;
    this.idleTimer = setInterval(() => this.closeIdle(), IDLE_TIMEOUT_MS / 4);
    this.idleTimer.unref();
  }

  stats(): HubStats {
    let channels = 0;
    for (const c of this.connections) channels += c.channels.size;
    return { connections: this.connections.size, channels, ...this.counters };
  }

  /** A new WebSocket of an environment, speaking `version`. */
  accept(ws: WebSocket, environment: EnvironmentName, version: Version, apikey?: string): void {
    const now = Date.now();
    const conn: Connection = { ws, version, environment, apikey, channels: new Map(), tokens: RATE_BURST, refilledAt: now, dropped: 0, lastSeen: now, queue: Promise.resolve() };
    this.connections.add(conn);
    this.awaitJoin(conn);
    ws.on('message', (data: Buffer, isBinary: boolean) => this.receive(conn, data, isBinary));
    ws.on('close', () => this.forget(conn));
    ws.on('error', (err) => this.log.debug({ err }, 'realtime socket error'));
  }

  /** Sends a broadcast to this instance's subscribers of `topic` (without the `realtime:` prefix). */
  deliver(environment: EnvironmentName, topic: string, event: string, payloadJson: string): void {
    const subscribers = this.subscribers.get(`${environment}|${TOPIC_PREFIX}${topic}`);
    if (!subscribers) return;
    const frames = new Map<Version, string | Buffer>();
    for (const conn of subscribers) {
      if (conn.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
        this.counters.slow_skips++;
        continue;
      }
      let frame = frames.get(conn.version);
      if (frame === undefined) frames.set(conn.version, (frame = encodeBroadcast(conn.version, `${TOPIC_PREFIX}${topic}`, event, payloadJson)));
      conn.ws.send(frame);
      this.counters.delivered++;
    }
  }

  /** Shutdown: every socket gets a close frame (1001 going away). */
  close(): void {
    clearInterval(this.idleTimer);
    for (const conn of this.connections) conn.ws.close(1001, 'server shutting down');
  }

  private receive(conn: Connection, data: Buffer, isBinary: boolean): void {
    const now = Date.now();
    conn.lastSeen = now;
    conn.tokens = Math.min(RATE_BURST, conn.tokens + ((now - conn.refilledAt) / 1000) * RATE_PER_SECOND);
    conn.refilledAt = now;
    if (conn.tokens < 1) {
      this.counters.dropped_frames++;
      if (++conn.dropped > DROPS_BEFORE_CLOSE) conn.ws.close(1008, 'message rate exceeded');
      return;
    }
    conn.tokens -= 1;
    const message = decode(conn.version, data, isBinary);
    if ('malformed' in message) {
      this.counters.dropped_frames++;
      return;
    }
    conn.queue = conn.queue.then(() => this.handle(conn, message)).catch((err: unknown) => this.log.warn({ err }, 'realtime frame failed'));
  }

  private send(conn: Connection, m: Message): void {
    if (conn.ws.readyState === conn.ws.OPEN) conn.ws.send(encode(conn.version, m));
  }

  private reply(conn: Connection, m: Message, status: 'ok' | 'error', response: Record<string, unknown>): void {
    this.send(conn, { join_ref: m.join_ref, ref: m.ref, topic: m.topic, event: 'phx_reply', payload: { status, response } });
  }

  private async handle(conn: Connection, m: Message): Promise<void> {
    if (m.topic === 'phoenix') {
      if (m.event === 'heartbeat') this.reply(conn, m, 'ok', {});
      return;
    }
    if (m.event === 'phx_join') return this.join(conn, m);
    const channel = conn.channels.get(m.topic);
    if (!channel) return this.reply(conn, m, 'error', { reason: 'unmatched topic' });
    switch (m.event) {
      case 'phx_leave':
        this.reply(conn, m, 'ok', {});
        return this.closeChannel(conn, channel);
      case 'access_token':
        return this.refresh(conn, channel, m.payload.access_token);
      case 'broadcast':
        return this.reply(conn, m, 'error', { reason: 'Unauthorized: this channel is server-sent only' });
      case 'presence':
        return this.reply(conn, m, 'error', { reason: 'Presence is not supported on this channel' });
      default:
        return this.reply(conn, m, 'error', { reason: `unknown event ${m.event}` });
    }
  }

  private async join(conn: Connection, m: Message): Promise<void> {
    const refusal = await this.authorize(conn, m);
    if (typeof refusal === 'string') {
      this.counters.refused_joins++;
      return this.reply(conn, m, 'error', { reason: refusal });
    }
    // A second join of a topic replaces the first, as Phoenix does.
    const previous = conn.channels.get(m.topic);
    if (previous) this.closeChannel(conn, previous);
    const channel: Channel = { topic: m.topic, joinRef: m.join_ref, sub: refusal.sub };
    this.schedule(conn, channel, refusal.exp);
    conn.channels.set(m.topic, channel);
    clearTimeout(conn.unjoined);
    const key = `${conn.environment}|${m.topic}`;
    let set = this.subscribers.get(key);
    if (!set) this.subscribers.set(key, (set = new Set()));
    set.add(conn);
    this.reply(conn, m, 'ok', { postgres_changes: [] });
  }

  /** The token's claims when the join may go ahead, or the reason it may not (Supabase's `Code: message`). */
  private async authorize(conn: Connection, m: Message): Promise<string | { sub: string; exp: number }> {
    if (!m.topic.startsWith(TOPIC_PREFIX)) return 'unmatched topic';
    const topic = m.topic.slice(TOPIC_PREFIX.length);
    const config = (m.payload.config ?? {}) as Record<string, unknown>;
    if (!isTrue(config.private)) return 'PrivateOnly: This project only allows private channels';
    if (Array.isArray(config.postgres_changes) && config.postgres_changes.length > 0) return 'Unsupported: postgres_changes are not offered by this hub';
    const environment = this.environments.get(conn.environment);
    const secret = environment?.config.realtimeSigningSecret;
    if (!environment || !secret) return 'RealtimeDisabled: realtime is not configured';
    const claims = await verifyToken(conn.environment, secret, m.payload.access_token ?? m.payload.user_token ?? conn.apikey);
    if ('refused' in claims) return claims.refused;
    const unauthorized = `Unauthorized: You do not have permissions to read from this Channel topic: ${topic}`;
    if ('anonymous' in claims) return unauthorized;
    const user = USER_TOPIC.exec(topic);
    if (user) return user[1] === claims.sub ? claims : unauthorized;
    const session = SESSION_TOPIC.exec(topic);
    if (!session) return unauthorized;
    const { rowCount } = await environment.db.query(
      'select 1 from training_session_members where session_id = $1::bigint and chat_id = $2::text',
      [Number(session[1]), claims.sub],
      { name: 'realtime_session_member' },
    );
    return rowCount > 0 ? claims : unauthorized;
  }

  /** access_token on a channel: a valid token of the same user extends it; any other closes it. */
  private async refresh(conn: Connection, channel: Channel, token: unknown): Promise<void> {
    const secret = this.environments.get(conn.environment)?.config.realtimeSigningSecret;
    if (token === null || token === undefined || !secret) return;
    const claims = await verifyToken(conn.environment, secret, token);
    if ('refused' in claims) return this.expel(conn, channel, claims.refused.replace(/^[A-Za-z]+: /, ''));
    if ('anonymous' in claims) return this.expel(conn, channel, `You do not have permissions to read from this Channel topic: ${channel.topic.slice(TOPIC_PREFIX.length)}`);
    if (claims.sub !== channel.sub) return this.expel(conn, channel, 'The token belongs to another user');
    this.schedule(conn, channel, claims.exp);
  }

  private schedule(conn: Connection, channel: Channel, exp: number): void {
    clearTimeout(channel.expiry);
    const ms = Math.max(0, exp * 1000 - Date.now());
    channel.expiry = setTimeout(() => this.expel(conn, channel, 'Token has expired 0 seconds ago'), ms);
    channel.expiry.unref();
  }

  /** Supabase's way out: a system error naming why, then phx_close; the client does not rejoin by itself. */
  private expel(conn: Connection, channel: Channel, message: string): void {
    if (conn.channels.get(channel.topic) !== channel) return;
    const subTopic = channel.topic.slice(TOPIC_PREFIX.length);
    this.send(conn, { join_ref: channel.joinRef, ref: null, topic: channel.topic, event: 'system', payload: { channel: subTopic, extension: 'system', message, status: 'error' } });
    this.closeChannel(conn, channel);
  }

  private closeChannel(conn: Connection, channel: Channel): void {
    clearTimeout(channel.expiry);
    conn.channels.delete(channel.topic);
    if (conn.channels.size === 0) this.awaitJoin(conn);
    this.unsubscribe(conn, channel.topic);
    this.send(conn, { join_ref: channel.joinRef, ref: channel.joinRef, topic: channel.topic, event: 'phx_close', payload: {} });
  }

  private unsubscribe(conn: Connection, topic: string): void {
    const key = `${conn.environment}|${topic}`;
    const set = this.subscribers.get(key);
    set?.delete(conn);
    if (set?.size === 0) this.subscribers.delete(key);
  }

  private forget(conn: Connection): void {
    clearTimeout(conn.unjoined);
    for (const channel of conn.channels.values()) {
      clearTimeout(channel.expiry);
      this.unsubscribe(conn, channel.topic);
    }
    conn.channels.clear();
    this.connections.delete(conn);
  }

  private awaitJoin(conn: Connection): void {
    clearTimeout(conn.unjoined);
    conn.unjoined = setTimeout(() => {
      if (conn.channels.size === 0) conn.ws.close(1008, `no channel joined within ${this.joinTimeoutMs / 1000} s`);
    }, this.joinTimeoutMs);
    conn.unjoined.unref();
  }

  private closeIdle(): void {
    const cutoff = Date.now() - IDLE_TIMEOUT_MS;
    for (const conn of this.connections) if (conn.lastSeen < cutoff) conn.ws.close(1000, 'idle');
  }
}
