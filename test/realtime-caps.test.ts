// The realtime hub's connection caps (issue 28), with real sockets on a real port: past
// REALTIME_MAX_CONNECTIONS_PER_ADDRESS one client address is refused before the upgrade (429 in the
// envelope) while other addresses are served; past REALTIME_MAX_CONNECTIONS the instance refuses
// everyone (503); the address is the socket's, or X-Forwarded-For's under TRUST_PROXY; a socket
// holding no channel is closed after the join timeout (30 s; shortened here through the hub's option).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from './helpers/app.js';
import { newTrainee } from './helpers/training.js';
import { listen, SECRETS, token } from './helpers/realtime.js';

interface Attempt {
  ws: WebSocket;
  /** The socket opened, or the HTTP status and body it was refused with. */
  outcome: Promise<{ open: true } | { status: number; body: string }>;
  closed: Promise<number>;
}

const opened: WebSocket[] = [];

function attempt(base: string, { from = '127.0.0.1', headers = {} }: { from?: string; headers?: Record<string, string> } = {}): Attempt {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/realtime/v1/websocket?apikey=x&vsn=2.0.0`, { headers: { host: 'localhost', ...headers }, localAddress: from });
  opened.push(ws);
  const outcome = new Promise<{ open: true } | { status: number; body: string }>((resolve, reject) => {
    ws.once('open', () => resolve({ open: true }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  return { ws, outcome, closed };
}

/** `count` attempts from one address, `concurrency` at a time; the sockets that opened and the refusals' statuses. */
async function attempts(base: string, count: number, options: Parameters<typeof attempt>[1] = {}, concurrency = 100) {
  const open: Attempt[] = [];
  const refused: number[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - i) }, () => attempt(base, options));
    for (const a of batch) {
      const outcome = await a.outcome;
      if ('open' in outcome) open.push(a);
      else refused.push(outcome.status);
    }
  }
  return { open, refused };
}

/** A served socket answers a heartbeat. */
async function heartbeat(a: Attempt): Promise<unknown> {
  const reply = new Promise((resolve) => a.ws.once('message', (data: Buffer) => resolve(JSON.parse(data.toString()))));
  a.ws.send(JSON.stringify([null, 'hb', 'phoenix', 'heartbeat', {}]));
  return reply;
}

const TOO_MANY = { success: false, error: 'This address holds 5 realtime connections to this instance already: close one first', code: 'TOO_MANY_CONNECTIONS' };

afterAll(() => {
  for (const ws of opened) ws.terminate();
});

const JOIN_TIMEOUT_MS = 1_000;

describe('per client address and per instance', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { ...SECRETS, REALTIME_MAX_CONNECTIONS_PER_ADDRESS: '5', REALTIME_MAX_CONNECTIONS: '9' } });
    base = await listen(t);
  });
  afterAll(() => t?.close());

  it('a client opening 1,000 sockets gets its 5, refused before the upgrade, while another address is served', async () => {
    const { open, refused } = await attempts(base, 1000);
    expect(open).toHaveLength(5);
    expect(refused).toEqual(Array(995).fill(429));
    const one = await attempt(base).outcome;
    expect(one).toEqual({ status: 429, body: JSON.stringify(TOO_MANY) });
    // 127.0.0.2 is another client address on the loopback: served, and its socket works.
    const other = attempt(base, { from: '127.0.0.2' });
    expect(await other.outcome).toEqual({ open: true });
    expect(await heartbeat(other)).toEqual([null, 'hb', 'phoenix', 'phx_reply', { status: 'ok', response: {} }]);
    // A socket closed frees its slot for the same address.
    open[0]!.ws.close();
    await open[0]!.closed;
    await vi.waitFor(async () => expect(await attempt(base).outcome).toEqual({ open: true }));
  });

  it('past REALTIME_MAX_CONNECTIONS, the instance refuses every address with 503 REALTIME_AT_CAPACITY', async () => {
    // Held so far: 5 from 127.0.0.1, 1 from 127.0.0.2 (the test above); up to 9 in all.
    const third = await attempts(base, 3, { from: '127.0.0.3' });
    expect(third.open).toHaveLength(3);
    expect(await attempt(base, { from: '127.0.0.4' }).outcome).toEqual({
      status: 503,
      body: JSON.stringify({ success: false, error: 'This instance holds all the realtime connections it may: retry later or on another instance', code: 'REALTIME_AT_CAPACITY' }),
    });
    third.open[0]!.ws.close();
    await third.open[0]!.closed;
    await vi.waitFor(async () => expect(await attempt(base, { from: '127.0.0.4' }).outcome).toEqual({ open: true }));
  });
});

describe('behind a proxy (TRUST_PROXY)', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { ...SECRETS, REALTIME_MAX_CONNECTIONS_PER_ADDRESS: '5', TRUST_PROXY: 'true' } });
    base = await listen(t);
  });
  afterAll(() => t?.close());

  it('counts the address X-Forwarded-For gives: one forwarded client gets its 5, another through the same proxy is served', async () => {
    const first = await attempts(base, 50, { headers: { 'x-forwarded-for': '203.0.113.10' } });
    expect(first.open).toHaveLength(5);
    expect(first.refused).toEqual(Array(45).fill(429));
    const second = await attempts(base, 5, { headers: { 'x-forwarded-for': '203.0.113.11' } });
    expect(second.open).toHaveLength(5);
  });
});

describe('a socket that joins no channel', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { ...SECRETS, REALTIME_MAX_CONNECTIONS_PER_ADDRESS: '5' }, hub: { joinTimeoutMs: JOIN_TIMEOUT_MS } });
    base = await listen(t);
  });
  afterAll(() => t?.close());

  it('is closed (1008) after the join timeout, heartbeats or not, and gives back its slot; a joined one stays until it leaves its last channel', async () => {
    // The join's token is made first: on a loaded machine its database work could outlast the timeout.
    const trainee = await newTrainee(t);
    const topic = `realtime:training:user:${trainee.agent.chat_id}`;
    const accessToken = await token(t, trainee);
    const idle = attempt(base);
    const beating = attempt(base);
    const joined = attempt(base);
    for (const a of [idle, beating, joined]) expect(await a.outcome).toEqual({ open: true });
    const beats = setInterval(() => beating.ws.send(JSON.stringify([null, 'hb', 'phoenix', 'heartbeat', {}])), 100);
    const frames: unknown[][] = [];
    joined.ws.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString()) as unknown[]));
    joined.ws.send(JSON.stringify(['1', '1', topic, 'phx_join', { config: { private: true }, access_token: accessToken }]));
    await vi.waitFor(() => expect(frames).toContainEqual(['1', '1', topic, 'phx_reply', { status: 'ok', response: { postgres_changes: [] } }]));
    const started = Date.now();
    expect(await idle.closed).toBe(1008);
    expect(await beating.closed).toBe(1008);
    clearInterval(beats);
    expect(Date.now() - started).toBeLessThan(JOIN_TIMEOUT_MS + 2000);
    // Well past the timeout, the joined socket is open; leaving its channel starts the clock again.
    await new Promise((r) => setTimeout(r, JOIN_TIMEOUT_MS + 200));
    expect(joined.ws.readyState).toBe(WebSocket.OPEN);
    joined.ws.send(JSON.stringify(['1', '2', topic, 'phx_leave', {}]));
    expect(await joined.closed).toBe(1008);
    // Their slots are back: five more sockets from the same address are served.
    const again = await attempts(base, 5);
    expect(again.open).toHaveLength(5);
  });
});
