// External Supabase mode (issue 12): with `<ENV>_REALTIME_URL` pointing at a Supabase project and
// `<ENV>_SUPABASE_SERVICE_KEY` set, broadcasts go through the project's REST broadcast endpoint
// (`POST <url>/realtime/v1/api/broadcast`, private messages, the service key as apikey and bearer).
// The request path never waits on it: messages are queued and sent by one sender per environment,
// with a timeout; after a failure the sender pauses (COOL_DOWN_MS) and drops what arrives meanwhile
// (counted and logged once), so an outage costs one attempt per cool-down, not a retry storm.
import type { Logger } from 'pino';
import type { EnvironmentName } from '../config.js';
import type { BroadcastMessage, Broadcaster } from '../training/broadcaster.js';

export const REQUEST_TIMEOUT_MS = 2000;
export const COOL_DOWN_MS = 5000;
/** Messages waiting beyond this are dropped (a backlog would only deliver stale news). */
export const MAX_QUEUED = 1000;
/** Supabase's own batch limit is per tenant; stay well under it. */
const BATCH = 100;

export interface SupabaseTarget {
  url: string;
  serviceKey: string;
}

interface Sender {
  queue: BroadcastMessage[];
  running: boolean;
  pausedUntil: number;
  dropped: number;
}

export class SupabaseBroadcaster implements Broadcaster {
  private readonly senders = new Map<EnvironmentName, Sender>();
  failures = 0;

  constructor(
    private readonly targets: Partial<Record<EnvironmentName, SupabaseTarget>>,
    private readonly log: Logger,
    /** Where the other environments' broadcasts go (the built-in hub), if any. */
    private readonly fallback?: Broadcaster,
  ) {}

  async send(environment: EnvironmentName, messages: readonly BroadcastMessage[]): Promise<void> {
    if (!this.targets[environment]) return this.fallback?.send(environment, messages);
    let sender = this.senders.get(environment);
    if (!sender) this.senders.set(environment, (sender = { queue: [], running: false, pausedUntil: 0, dropped: 0 }));
    if (Date.now() < sender.pausedUntil || sender.queue.length + messages.length > MAX_QUEUED) {
      sender.dropped += messages.length;
      return;
    }
    sender.queue.push(...messages);
    if (!sender.running) void this.drain(environment, sender);
  }

  /** Resolves when nothing is queued or in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while ([...this.senders.values()].some((s) => s.running)) await new Promise((r) => setTimeout(r, 10));
  }

  private async drain(environment: EnvironmentName, sender: Sender): Promise<void> {
    sender.running = true;
    const target = this.targets[environment]!;
    try {
      while (sender.queue.length > 0) {
        const batch = sender.queue.splice(0, BATCH);
        try {
          const res = await fetch(new URL('/realtime/v1/api/broadcast', target.url), {
            method: 'POST',
            headers: { apikey: target.serviceKey, authorization: `Bearer ${target.serviceKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ messages: batch.map((m) => ({ topic: m.topic, event: m.event, payload: m.payload, private: true })) }),
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          });
          await res.arrayBuffer().catch(() => undefined);
          if (res.status !== 202 && !res.ok) throw new Error(`Supabase answered ${res.status}`);
        } catch (err) {
          this.failures++;
          const dropped = batch.length + sender.queue.length + sender.dropped;
          sender.queue = [];
          sender.dropped = 0;
          sender.pausedUntil = Date.now() + COOL_DOWN_MS;
          this.log.warn({ err, environment, dropped }, `realtime broadcast to Supabase failed; broadcasts paused for ${COOL_DOWN_MS} ms`);
        }
      }
      if (sender.dropped > 0) {
        this.log.warn({ environment, dropped: sender.dropped }, 'realtime broadcasts dropped while Supabase was paused');
        sender.dropped = 0;
      }
    } finally {
      sender.running = false;
    }
  }
}
