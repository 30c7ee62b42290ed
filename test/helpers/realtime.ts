// The real @supabase/realtime-js client against the hub, as the training front end uses it
// (Node 20 has no global WebSocket: `ws` is its transport, with the Host header of the
// environment under test).
import { RealtimeClient, type RealtimeChannel } from '@supabase/realtime-js';
import WebSocket from 'ws';
import type { TestApp } from './app.js';
import type { Person } from './identity.js';

export const SECRETS = {
  PRODUCTION_REALTIME_SIGNING_SECRET: 'production-realtime-secret-0123456789abcdef',
  DEMO_REALTIME_SIGNING_SECRET: 'demo-realtime-secret-0123456789abcdef-demo',
};

export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

function transportFor(host: string) {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols, { headers: { host } });
    }
  };
}

export interface Received {
  topic: string;
  event: string;
  payload: { session_id: number; event: { type: string; data: unknown } };
}

export interface Subscriber {
  client: RealtimeClient;
  received: Received[];
  statuses: string[];
  errors: string[];
  channel: RealtimeChannel;
}

export async function token(t: TestApp, person: Person): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: '/training/realtime-token', headers: person.headers });
  if (res.statusCode !== 200) throw new Error(`no token: ${res.body}`);
  return res.json().token as string;
}

export function connect(baseUrl: string, options: { vsn?: '1.0.0' | '2.0.0'; host?: string } = {}): RealtimeClient {
  return new RealtimeClient(`${baseUrl}/realtime/v1`, {
    params: { apikey: 'cms-production-anon' },
    transport: transportFor(options.host ?? 'localhost') as never,
    vsn: options.vsn ?? '2.0.0',
    heartbeatIntervalMs: 25_000,
  });
}

/** Subscribes to `topic` (private) with `accessToken`; resolves at the first SUBSCRIBED or CHANNEL_ERROR. */
export async function subscribe(client: RealtimeClient, topic: string, accessToken: string | undefined): Promise<Subscriber> {
  if (accessToken !== undefined) await client.setAuth(accessToken);
  const received: Received[] = [];
  const statuses: string[] = [];
  const errors: string[] = [];
  const channel = client.channel(topic, { config: { private: true } });
  channel.on('broadcast', { event: '*' }, (message: { event: string; payload: Received['payload'] }) => received.push({ topic, event: message.event, payload: message.payload }));
  await new Promise<void>((resolve) => {
    channel.subscribe((status, err) => {
      statuses.push(status);
      if (err) errors.push(err.message);
      if (status === 'SUBSCRIBED' || status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') resolve();
    });
  });
  return { client, received, statuses, errors, channel };
}
