// Raw Supabase Realtime (Phoenix channels, vsn 2.0.0) subscribers for the benchmarks: open, join a
// private channel with a token, heartbeat, and record each broadcast frame as it arrives. Not
// @supabase/realtime-js: thousands of those would make the load generator the bottleneck on 2 cores.
import WebSocket from 'ws';

/** realtime-js's heartbeat; the hub closes a connection silent for 60 s. */
export const HEARTBEAT_MS = 25_000;
export const JOIN_TIMEOUT_MS = 10_000;

export interface Subscriber { topic: string; chatId: string; instance: number; ws?: WebSocket }
/** One broadcast frame as it arrived; `at` and `createdAt` in epoch ms (the service's clock is ours). */
export interface Receipt { sub: number; id: number; at: number; createdAt: number }

/** Broadcast frame, kind 4: kind, topic length, event length, metadata length, encoding; topic, event, metadata, JSON payload. */
function decodeBroadcast(data: Buffer): { topic: string; id: number; createdAt: number } | undefined {
  if (data.length < 5 || data[0] !== 4 || data[4] !== 1) return undefined;
  const topicEnd = 5 + data[1]!;
  const payload = JSON.parse(data.toString('utf8', topicEnd + data[2]! + data[3]!)) as { event: { id: number; created_at: string } };
  return { topic: data.toString('utf8', 5, topicEnd), id: payload.event.id, createdAt: Date.parse(payload.event.created_at) };
}

export class Subscribers {
  readonly receipts: Receipt[] = [];
  readonly problems: string[] = [];
  refused = 0;
  private closing = false;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(readonly list: Subscriber[]) {}

  /** Opens the socket and joins; resolves once the join is answered (a refusal is counted). */
  join(index: number, url: string, token: string): Promise<void> {
    const sub = this.list[index]!;
    const topic = `realtime:${sub.topic}`;
    return new Promise((resolve) => {
      const ws = (sub.ws = new WebSocket(`${url.replace(/^http/, 'ws')}/realtime/v1/websocket?apikey=bench&vsn=2.0.0`, { perMessageDeflate: false }));
      let joined = false;
      const problem = (what: string) => {
        if (!this.closing) this.problems.push(`${sub.topic} on instance ${sub.instance + 1}: ${what}`);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => problem('join not answered'), JOIN_TIMEOUT_MS);
      ws.on('open', () => {
        const config = { broadcast: { ack: false, self: false }, presence: { key: '', enabled: false }, postgres_changes: [], private: true };
        ws.send(JSON.stringify(['1', '1', topic, 'phx_join', { config, access_token: token }]));
      });
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        const at = Date.now();
        if (isBinary) {
          const frame = decodeBroadcast(data);
          if (frame && frame.topic === topic) this.receipts.push({ sub: index, id: frame.id, at, createdAt: frame.createdAt });
          else this.problems.push(`unexpected binary frame on ${sub.topic}`);
          return;
        }
        const [, ref, , event, payload] = JSON.parse(data.toString('utf8')) as [unknown, unknown, string, string, { status?: string; response?: { reason?: string } }];
        if (!joined && ref === '1' && event === 'phx_reply') {
          joined = true;
          clearTimeout(timer);
          if (payload.status !== 'ok') {
            this.refused++;
            this.problems.push(`${sub.topic}: join refused: ${payload.response?.reason}`);
          }
          return resolve();
        }
        if (event !== 'phx_reply' || payload.status !== 'ok') this.problems.push(`${sub.topic}: unexpected ${event} ${JSON.stringify(payload)}`);
      });
      ws.on('error', (err) => problem(`socket error ${err.message}`));
      ws.on('close', (code) => problem(`closed (${code})`));
    });
  }

  /** Each second a 25th of the clients send their heartbeat: every one every 25 s, not all at once. */
  startHeartbeats(): void {
    let tick = 0;
    const slots = HEARTBEAT_MS / 1000;
    this.heartbeat = setInterval(() => {
      const slot = tick++ % slots;
      for (let i = slot; i < this.list.length; i += slots) {
        const ws = this.list[i]!.ws;
        if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify([null, `h${tick}`, 'phoenix', 'heartbeat', {}]));
      }
    }, 1000);
  }

  open(): number {
    return this.list.filter((s) => s.ws?.readyState === WebSocket.OPEN).length;
  }

  close(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
    for (const sub of this.list) sub.ws?.terminate();
  }
}
