// The hub at the frame level (issue 12): heartbeats, leave, refusals of what the channels do not
// offer, malformed and oversized frames, a flood, token expiry and refresh, a batch too large for
// NOTIFY, and the close frame at shutdown. A raw `ws` client speaks vsn 2.0.0 as realtime-js does.
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { listen, SECRETS, token } from './helpers/realtime.js';
import { createSession, importDemoScenarios, newTrainee, newTrainer, post } from './helpers/training.js';

type Frame = [string | null, string | null, string, string, Record<string, unknown>];

interface Raw {
  ws: WebSocket;
  frames: Frame[];
  /** Decoded kind-4 binary broadcasts: [topic, event, payload]. */
  broadcasts: [string, string, unknown][];
  closed: Promise<number>;
  send(frame: Frame): void;
}

async function open(base: string, vsn = '2.0.0'): Promise<Raw> {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/realtime/v1/websocket?apikey=x&vsn=${vsn}`, { headers: { host: 'localhost' } });
  const raw: Raw = {
    ws,
    frames: [],
    broadcasts: [],
    closed: new Promise((resolve) => ws.on('close', (code) => resolve(code))),
    send: (frame) => ws.send(JSON.stringify(frame)),
  };
  ws.on('message', (data: Buffer, isBinary) => {
    if (!isBinary) return void raw.frames.push(JSON.parse(data.toString()) as Frame);
    expect(data[0]).toBe(4);
    const [topicLength, eventLength, metaLength] = [data[1]!, data[2]!, data[3]!];
    const topic = data.subarray(5, 5 + topicLength).toString();
    const event = data.subarray(5 + topicLength, 5 + topicLength + eventLength).toString();
    raw.broadcasts.push([topic, event, JSON.parse(data.subarray(5 + topicLength + eventLength + metaLength).toString())]);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  return raw;
}

const joinFrame = (ref: string, topic: string, accessToken: string | undefined, config: Record<string, unknown> = {}): Frame => [
  ref,
  ref,
  `realtime:${topic}`,
  'phx_join',
  { config: { broadcast: { ack: false, self: false }, presence: { key: '', enabled: false }, postgres_changes: [], private: true, ...config }, access_token: accessToken },
];

// A reply comes within milliseconds: looked for every 5 ms (50 by default).
const replyTo = (raw: Raw, ref: string) => vi.waitFor(() => {
  const found = raw.frames.find((f) => f[1] === ref && f[3] === 'phx_reply');
  expect(found).toBeDefined();
  return found![4] as { status: string; response: Record<string, unknown> };
}, { interval: 5 });

describe('the realtime hub, frame by frame', () => {
  let t: TestApp;
  let base: string;
  let trainer: Person;
  let trainee: Person;
  let session: number;
  const sockets: Raw[] = [];
  const connect = async (vsn?: string) => {
    const raw = await open(base, vsn);
    sockets.push(raw);
    return raw;
  };
  // A token that lives at least `seconds` (exp is in whole seconds: from the next whole second, or
  // one minted late in a second could expire before its join is read), with its expiry in ms.
  const shortToken = async (sub: string, seconds: number) => {
    const exp = Math.ceil(Date.now() / 1000) + seconds;
    const jwt = await new SignJWT({ role: 'authenticated' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setIssuer('case-management:production')
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(SECRETS.PRODUCTION_REALTIME_SIGNING_SECRET));
    return { jwt, expiresAt: exp * 1000 };
  };

  beforeAll(async () => {
    t = await createTestApp({ env: SECRETS });
    base = await listen(t);
    const scenarios = await importDemoScenarios(t.db.production);
    trainer = await newTrainer(t);
    trainee = await newTrainee(t);
    session = await createSession(t, trainer, trainee, scenarios['first-response']);
    await post(t, `/training/sessions/${session}/start`, trainer);
  });
  // The app is shut down by the last case; closed once.
  let closed: Promise<void> | undefined;
  const shutDown = () => (closed ??= t.close());
  afterAll(async () => {
    for (const s of sockets) s.ws.terminate();
    await shutDown();
  });

  it('answers heartbeats, joins, leaves (reply then phx_close) and refuses what the channels do not offer', async () => {
    const raw = await connect();
    raw.send([null, '1', 'phoenix', 'heartbeat', {}]);
    expect(await replyTo(raw, '1')).toEqual({ status: 'ok', response: {} });
    raw.send(joinFrame('2', `training:user:${trainee.agent.chat_id}`, await token(t, trainee)));
    expect(await replyTo(raw, '2')).toEqual({ status: 'ok', response: { postgres_changes: [] } });
    const topic = `realtime:training:user:${trainee.agent.chat_id}`;
    raw.send(['2', '3', topic, 'presence', { type: 'presence', event: 'track', payload: {} }]);
    expect((await replyTo(raw, '3')).response.reason).toBe('Presence is not supported on this channel');
    raw.send(['2', '4', topic, 'broadcast', { type: 'broadcast', event: 'x', payload: {} }]);
    expect((await replyTo(raw, '4')).response.reason).toBe('Unauthorized: this channel is server-sent only');
    // A client's broadcast as realtime-js sends it with vsn 2.0.0: binary kind 3.
    const header = Buffer.from([3, 1, 1, topic.length, 1, 0, 1]);
    raw.ws.send(Buffer.concat([header, Buffer.from(`25${topic}x{}`)]));
    expect((await replyTo(raw, '5')).response.reason).toBe('Unauthorized: this channel is server-sent only');
    raw.send([null, '6', 'realtime:elsewhere', 'whatever', {}]);
    expect((await replyTo(raw, '6')).response.reason).toBe('unmatched topic');
    raw.send(joinFrame('7', `training:user:${trainee.agent.chat_id}-x`, await token(t, trainee), { postgres_changes: [{ event: '*', schema: 'public' }] }));
    expect((await replyTo(raw, '7')).response.reason).toBe('Unsupported: postgres_changes are not offered by this hub');
    raw.send(['2', '8', topic, 'phx_leave', {}]);
    expect(await replyTo(raw, '8')).toEqual({ status: 'ok', response: {} });
    await vi.waitFor(() => expect(raw.frames.some((f) => f[3] === 'phx_close' && f[2] === topic && f[1] === '2')).toBe(true));
    await post(t, `/training/sessions/${session}/inject`, trainer, { type: 'custom_message', content: 'after leaving' });
    await new Promise((r) => setTimeout(r, 100));
    expect(raw.broadcasts).toEqual([]);
  });

  it('survives 1,000 garbage frames from one client (dropped, then that client closed) while serving another', async () => {
    const good = await connect();
    good.send(joinFrame('1', `training:session:${session}`, await token(t, trainee)));
    expect((await replyTo(good, '1')).status).toBe('ok');
    const bad = await connect();
    for (let i = 0; i < 1000; i++) bad.ws.send(i % 3 === 0 ? '{not json' : i % 3 === 1 ? Buffer.from([9, 9, 9]) : JSON.stringify(['x', 'y']));
    expect(await bad.closed).toBe(1008);
    await post(t, `/training/sessions/${session}/evidence/witness/release`, trainer);
    await vi.waitFor(() => expect(good.broadcasts.map(([topic, event]) => [topic, event])).toEqual([[`realtime:training:session:${session}`, 'EVIDENCE_RELEASED']]));
    const director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
    const health = await t.app.inject({ method: 'GET', url: '/admin/health', headers: director.headers });
    expect(health.json().api.realtime).toMatchObject({ slow_skips: 0, broadcast_failures: 0 });
    expect(health.json().api.realtime.dropped_frames).toBeGreaterThanOrEqual(1000);
    expect(health.json().api.realtime.channels).toBeGreaterThanOrEqual(1);
    expect(health.json().api.realtime.delivered).toBeGreaterThanOrEqual(1);
  });

  it('closes a connection that sends a frame over 64 KiB (1009)', async () => {
    const raw = await connect();
    raw.ws.send('x'.repeat(70 * 1024));
    expect(await raw.closed).toBe(1009);
  });

  it('closes a channel whose token expires unrefreshed (system error, then phx_close); a refreshed token keeps it', async () => {
    const raw = await connect();
    const topic = `training:user:${trainee.agent.chat_id}`;
    raw.send(joinFrame('1', topic, (await shortToken(trainee.agent.chat_id, 1)).jwt));
    expect((await replyTo(raw, '1')).status).toBe('ok');
    const kept = await connect();
    const fresh = await token(t, trainee);
    const keptToken = await shortToken(trainee.agent.chat_id, 2);
    kept.send(joinFrame('1', topic, keptToken.jwt));
    expect((await replyTo(kept, '1')).status).toBe('ok');
    kept.send(['1', '2', `realtime:${topic}`, 'access_token', { access_token: fresh }]);
    await vi.waitFor(
      () => {
        const system = raw.frames.find((f) => f[3] === 'system');
        expect(system).toEqual(['1', null, `realtime:${topic}`, 'system', { channel: topic, extension: 'system', message: 'Token has expired 0 seconds ago', status: 'error' }]);
        expect(raw.frames.at(-1)).toEqual(['1', '1', `realtime:${topic}`, 'phx_close', {}]);
      },
      { timeout: 5000 },
    );
    // Past the first token's expiry: only the refresh keeps the channel open.
    await new Promise((r) => setTimeout(r, Math.max(0, keptToken.expiresAt + 500 - Date.now())));
    expect(kept.frames.some((f) => f[3] === 'system')).toBe(false);
    await post(t, `/training/sessions/${session}/pause`, trainer);
    await vi.waitFor(() => expect(kept.broadcasts.map(([, event]) => event)).toEqual(['SESSION_PAUSED']));
    expect(raw.broadcasts).toEqual([]);
    // Another user's token on the channel closes it.
    kept.send(['1', '3', `realtime:${topic}`, 'access_token', { access_token: await token(t, trainer) }]);
    await vi.waitFor(() => expect(kept.frames.some((f) => f[3] === 'system' && f[4].message === 'The token belongs to another user')).toBe(true));
    await post(t, `/training/sessions/${session}/resume`, trainer);
  });

  it('delivers a batch too large for one NOTIFY through the outbox, in both serializers', async () => {
    const v2 = await connect();
    const v1 = await connect('1.0.0');
    v2.send(joinFrame('1', `training:user:${trainer.agent.chat_id}`, await token(t, trainer)));
    v1.ws.send(JSON.stringify({ topic: `realtime:training:user:${trainer.agent.chat_id}`, event: 'phx_join', payload: joinFrame('1', '', await token(t, trainer))[4], ref: '1', join_ref: '1' }));
    expect((await replyTo(v2, '1')).status).toBe('ok');
    await vi.waitFor(() => expect(v1.frames.length).toBeGreaterThan(0));
    expect(v1.frames[0]).toEqual({ topic: `realtime:training:user:${trainer.agent.chat_id}`, event: 'phx_reply', payload: { status: 'ok', response: { postgres_changes: [] } }, ref: '1', join_ref: '1' });
    const outbox = async () => (await t.db.production.query<{ n: number }>('select count(*)::int as n from realtime_outbox')).rows[0]!.n;
    const before = await outbox();
    const big = 'b'.repeat(3900);
    const res = await post(t, `/training/sessions/${session}/events`, trainee, { type: 'ADD_FINDING', payload: { text: big } });
    expect(res.statusCode).toBe(201);
    expect(await outbox()).toBe(before + 1);
    await vi.waitFor(() => {
      expect(v2.broadcasts.map(([, event]) => event)).toEqual(['ADD_FINDING']);
      expect(v1.frames.filter((f) => (f as unknown as { event: string }).event === 'broadcast')).toHaveLength(1);
    });
    expect(v2.broadcasts[0]![2]).toMatchObject({ session_id: session, event: { type: 'ADD_FINDING', data: { payload: { text: big } } } });
    const v1Frame = v1.frames.find((f) => (f as unknown as { event: string }).event === 'broadcast') as unknown as { payload: { type: string; event: string; payload: unknown } };
    expect(v1Frame.payload).toMatchObject({ type: 'broadcast', event: 'ADD_FINDING', payload: { session_id: session } });
  });

  it('answers a plain HTTP request in the envelope: 426 without the upgrade, 400 for an unknown vsn', async () => {
    const plain = await fetch(`${base}/realtime/v1/websocket?vsn=2.0.0`, { headers: { host: 'localhost' } });
    expect(plain.status).toBe(426);
    expect(await plain.json()).toEqual({
      success: false,
      error: '/realtime/v1/websocket speaks WebSocket: send the request with Upgrade: websocket',
      code: 'UPGRADE_REQUIRED',
    });
    const unknown = await fetch(`${base}/realtime/v1/websocket?vsn=3.0.0`, { headers: { host: 'localhost' } });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toEqual({ success: false, error: 'querystring.vsn must be one of: 1.0.0, 2.0.0', code: 'VALIDATION_ERROR' });
  });

  it('refuses an unknown vsn before the upgrade, and closes every socket with 1001 at shutdown', async () => {
    await expect(open(base, '3.0.0')).rejects.toThrow('400');
    const raw = await connect();
    await shutDown();
    expect(await raw.closed).toBe(1001);
  });
});
