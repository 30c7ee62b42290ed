// A stand-in game relay on a real port, speaking the ER:LC private server API as a relay does:
// `GET /v1/server/players` with `Server-Key`. The tests and the benchmark say how it answers; it counts calls.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RelayReply {
  status?: number;
  body?: unknown;
  /** A raw body (not JSON-encoded), e.g. invalid JSON or a huge one. */
  raw?: string;
  headers?: Record<string, string>;
  /** Accept the request and never answer. */
  hang?: boolean;
  /** Answer after this many milliseconds. */
  delayMs?: number;
}

export interface StandInRelay {
  url: string;
  calls: number;
  keys: (string | undefined)[];
  /** How the relay answers from now on. */
  reply: RelayReply | ((request: IncomingMessage) => RelayReply);
  close(): Promise<void>;
}

export const player = (name: string, id: number, extra: Record<string, unknown> = {}) => ({
  Player: `${name}:${id}`,
  Permission: 'Normal',
  Callsign: null,
  Team: 'Civilian',
  ...extra,
});

export async function startRelay(reply: StandInRelay['reply'] = { body: [] }): Promise<StandInRelay> {
  const held: ServerResponse[] = [];
  const relay = { url: '', calls: 0, keys: [] as (string | undefined)[], reply } as StandInRelay;
  const server: Server = createServer((request, response) => {
    relay.calls++;
    relay.keys.push(request.headers['server-key'] as string | undefined);
    const r = typeof relay.reply === 'function' ? relay.reply(request) : relay.reply;
    if (request.url !== '/v1/server/players') {
      response.writeHead(404).end();
      return;
    }
    if (r.hang) {
      held.push(response);
      return;
    }
    const send = () => {
      const text = r.raw ?? JSON.stringify(r.body ?? []);
      response.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers }).end(text);
    };
    if (r.delayMs) setTimeout(send, r.delayMs);
    else send();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  relay.close = async () => {
    for (const response of held) response.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return relay;
}

/** A URL on which nothing listens (connection refused). */
export async function refusedUrl(): Promise<string> {
  const relay = await startRelay();
  const url = relay.url;
  await relay.close();
  return url;
}
