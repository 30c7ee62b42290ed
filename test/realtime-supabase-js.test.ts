// The training front end with today's @supabase/supabase-js (issue 19): the client of
// test/helpers/training-frontend.ts (the code docs/realtime.md shows) over a real port, `ws` as its
// transport (Node 20). One client holds the user and the session channel, gets events on each,
// renews its token while subscribed and rejoins both channels by itself after the server drops
// its socket, with no join refused; a client with no token of its own is refused as Supabase
// refuses the anon key on a private channel.
import { readFileSync } from 'node:fs';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { mintToken } from '../src/realtime/tokens.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { listen, SECRETS } from './helpers/realtime.js';
import { subscribeTraining, trainingRealtime, type Api, type TrainingBroadcast } from './helpers/training-frontend.js';
import { createSession, importDemoScenarios, newTrainee, newTrainer, post, sessionEventTypes } from './helpers/training.js';

type Frame = [string | null, string | null, string, string, Record<string, unknown>];

/** `ws` recording every text frame the client sends (vsn 2.0.0: JSON arrays). */
function recordingTransport(sent: Frame[], urls: string[] = []) {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      urls.push(String(url));
      const send = this.send.bind(this) as (...args: unknown[]) => void;
      this.send = ((data: unknown, ...rest: unknown[]) => {
        if (typeof data === 'string') sent.push(JSON.parse(data) as Frame);
        send(data, ...rest);
      }) as typeof this.send;
    }
  };
}

/** What one channel saw: its statuses (with errors) and its broadcasts. */
function channelLog() {
  const log = { statuses: [] as string[], events: [] as string[], payloads: [] as TrainingBroadcast[] };
  return {
    log,
    onEvent: (event: string, payload: TrainingBroadcast) => void (log.events.push(event), log.payloads.push(payload)),
    onStatus: (status: string, err?: Error) => void log.statuses.push(err ? `${status}: ${err.message}` : status),
  };
}

/** The front end's GET with its session cookie, over the real port. */
const apiOf = (base: string, person: Person): Api => async <T>(path: string) => {
  const res = await fetch(`${base}${path}`, { headers: { cookie: person.cookie } });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
};

async function realtimeHealth(t: TestApp) {
  const director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
  const res = await t.app.inject({ method: 'GET', url: '/admin/health', headers: director.headers });
  expect(res.statusCode).toBe(200);
  return res.json().api.realtime as Record<string, number>;
}

// One app for the file, but for the case of a configuration of its own (the last one).
let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp({ env: SECRETS });
  base = await listen(t);
});
afterAll(() => t?.close());

describe('the training front end with @supabase/supabase-js', () => {
  let scenarios: Record<string, number>;
  const clients: SupabaseClient[] = [];
  beforeAll(async () => {
    scenarios = await importDemoScenarios(t.db.production);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.removeAllChannels()));
  });

  it('one client: both channels with events on each, a token renewed while subscribed, both rejoined after the server drops the socket, no join refused', async () => {
    const trainer = await newTrainer(t);
    const trainee = await newTrainee(t);
    const real = apiOf(base, trainee);
    // The tokens the front end is handed, in order. The first is minted as though fetched 236 s
    // ago (363 to 364 s left: exp is in whole seconds), so that the 60 % rule (360 s left) renews it
    // 3 to 4 s later, within the test, once both channels are joined (well under a second here).
    const handed: string[] = [];
    const api: Api = async <T>(path: string) => {
      const body = await real<{ success: true; token: string; ttl: number; expires_at: string }>(path);
      if (path !== '/training/realtime-token') return body as T;
      const token = handed.length > 0 ? body : { success: true, ...(await mintToken('production', SECRETS.PRODUCTION_REALTIME_SIGNING_SECRET, trainee.agent.chat_id, Date.now() - 236_000)) };
      handed.push(token.token);
      return token as T;
    };
    const sent: Frame[] = [];
    // A heartbeat a second (25 s by default): supabase-js asks accessToken at each one. A reconnect
    // after 100 ms (1 s, then longer, by default).
    const supabase = await trainingRealtime(api, { transport: recordingTransport(sent) as never, heartbeatIntervalMs: 1000, reconnectAfterMs: () => 100 });
    clients.push(supabase);
    expect(handed).toHaveLength(1);
    const userTopic = `training:user:${trainee.agent.chat_id}`;
    const user = channelLog();
    subscribeTraining(supabase, userTopic, user.onEvent, user.onStatus);
    await vi.waitFor(() => expect(user.log.statuses).toEqual(['SUBSCRIBED']));
    const id = await createSession(t, trainer, trainee, scenarios['first-response']);
    const sessionTopic = `training:session:${id}`;
    const room = channelLog();
    subscribeTraining(supabase, sessionTopic, room.onEvent, room.onStatus);
    await vi.waitFor(() => expect(room.log.statuses).toEqual(['SUBSCRIBED']));
    const framesOf = (event: string, from = 0) => sent.slice(from).filter((f) => f[3] === event).map((f) => [f[2], f[4].access_token]);
    expect(framesOf('phx_join')).toEqual([[`realtime:${userTopic}`, handed[0]], [`realtime:${sessionTopic}`, handed[0]]]);

    expect((await post(t, `/training/sessions/${id}/start`, trainer)).statusCode).toBe(200);
    expect((await post(t, `/training/sessions/${id}/evidence/witness/release`, trainer)).statusCode).toBe(200);
    await vi.waitFor(() => {
      expect(user.log.events).toEqual(['SESSION_CREATED', 'SESSION_STARTED', 'SCENARIO_ACTIVATED']);
      expect(room.log.events).toEqual(['EVIDENCE_RELEASED']);
    });

    // The renewal: a heartbeat finds less than 60 % left, the callback fetches a new token and
    // supabase-js pushes it to both joined channels; the hub keeps them (an invalid one would close them).
    await vi.waitFor(() => expect(framesOf('access_token')).toEqual([[`realtime:${userTopic}`, handed[1]], [`realtime:${sessionTopic}`, handed[1]]]), { timeout: 15_000, interval: 100 });
    expect(handed).toHaveLength(2);
    expect(decodeJwt(handed[1]!).exp! - Date.now() / 1000).toBeGreaterThan(590);
    expect((await post(t, `/training/sessions/${id}/evidence/witness/lock`, trainer)).statusCode).toBe(200);
    await vi.waitFor(() => expect(room.log.events).toEqual(['EVIDENCE_RELEASED', 'EVIDENCE_LOCKED']));
    expect(await realtimeHealth(t)).toMatchObject({ connections: 1, channels: 2, refused_joins: 0 });

    // The server drops the socket (no close frame): supabase-js reconnects (after 100 ms) and rejoins
    // both channels with the token it holds now, the renewed one.
    const before = sent.length;
    expect(t.app.websocketServer.clients.size).toBe(1);
    for (const ws of t.app.websocketServer.clients) ws.terminate();
    await vi.waitFor(() => {
      expect(user.log.statuses.at(-1)).toBe('SUBSCRIBED');
      expect(room.log.statuses.at(-1)).toBe('SUBSCRIBED');
      expect(framesOf('phx_join', before)).toHaveLength(2);
    }, { timeout: 15_000, interval: 100 });
    expect(framesOf('phx_join', before).sort()).toEqual([[`realtime:${sessionTopic}`, handed[1]], [`realtime:${userTopic}`, handed[1]]]);
    expect(user.log.statuses).toEqual(['SUBSCRIBED', expect.stringMatching(/^CHANNEL_ERROR/), 'SUBSCRIBED']);
    expect(room.log.statuses).toEqual(['SUBSCRIBED', expect.stringMatching(/^CHANNEL_ERROR/), 'SUBSCRIBED']);

    expect((await post(t, `/training/sessions/${id}/evidence/witness/release`, trainer)).statusCode).toBe(200);
    expect((await post(t, `/training/sessions/${id}/evaluate`, trainer, { score: 90, result: 'pass' })).statusCode).toBe(200);
    await vi.waitFor(() => {
      expect(user.log.events).toEqual(['SESSION_CREATED', 'SESSION_STARTED', 'SCENARIO_ACTIVATED', 'SESSION_EVALUATED']);
      expect(room.log.events).toEqual(['EVIDENCE_RELEASED', 'EVIDENCE_LOCKED', 'EVIDENCE_RELEASED']);
    });
    // What arrived is what was written: the session's events, each on its channel.
    const written = await sessionEventTypes(t.db.production, id);
    expect([...user.log.payloads, ...room.log.payloads].map((p) => p.event.type).sort()).toEqual([...written].sort());
    expect(user.log.payloads.every((p) => p.session_id === id) && room.log.payloads.every((p) => p.session_id === id)).toBe(true);
    expect(handed).toHaveLength(2);
    expect(await realtimeHealth(t)).toMatchObject({ connections: 1, channels: 2, refused_joins: 0 });
  });
});

describe('docs/realtime.md', () => {
  it('shows the front end’s code exactly as the test helper runs it', () => {
    const helper = readFileSync(new URL('./helpers/training-frontend.ts', import.meta.url), 'utf8');
    const code = helper.slice(helper.indexOf('import ')).trimEnd();
    expect(readFileSync(new URL('../docs/realtime.md', import.meta.url), 'utf8')).toContain('\n```ts\n' + code + '\n```\n');
  });
});

describe('a client with no token of its own', () => {
  it('falls back to the anon key, a JWT with role anon, and is refused as unauthorised for a private channel (as Supabase answers), not as a malformed token', async () => {
    const me = await newTrainee(t);
    const config = await apiOf(base, me)<{ backend_url: string; anon_key: string }>('/training/realtime-config');
    expect(config.backend_url).toBe(base);
    expect(decodeJwt(config.anon_key)).toEqual({ role: 'anon', iss: 'case-management:production' });
    const sent: Frame[] = [];
    const sockets: string[] = [];
    const supabase = createClient(config.backend_url, config.anon_key, {
      auth: { persistSession: false, autoRefreshToken: false },
      realtime: { transport: recordingTransport(sent, sockets) as never },
    });
    const topic = `training:user:${me.agent.chat_id}`;
    // Its first join goes out before supabase-js has asked its callback (no token: the hub takes
    // the socket's apikey, as Supabase takes the tenant token), its retry with the anon key itself.
    const refusals: string[] = [];
    await new Promise<void>((resolve) => {
      supabase.channel(topic, { config: { private: true } }).subscribe((status, err) => {
        refusals.push(`${status}: ${err?.message}`);
        if (refusals.length === 2) resolve();
      });
    });
    await supabase.removeAllChannels();
    expect(refusals.slice(0, 2)).toEqual(Array(2).fill(`CHANNEL_ERROR: Unauthorized: You do not have permissions to read from this Channel topic: ${topic}`));
    expect(sockets).toEqual([expect.stringContaining(`apikey=${config.anon_key}`)]);
    expect(sent.filter((f) => f[3] === 'phx_join').slice(0, 2).map((f) => f[4].access_token)).toEqual([undefined, config.anon_key]);
    expect((await realtimeHealth(t)).refused_joins).toBeGreaterThanOrEqual(2);
  });

  it('<ENV>_REALTIME_ANON_KEY still replaces it', async () => {
    const t = await createTestApp({ env: { ...SECRETS, PRODUCTION_REALTIME_ANON_KEY: 'project-anon-key' } });
    try {
      const me = await newTrainee(t);
      const res = await t.app.inject({ method: 'GET', url: '/training/realtime-config', headers: me.headers });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true, backend_url: 'http://localhost', anon_key: 'project-anon-key', token_path: '/training/realtime-token' });
    } finally {
      await t.close();
    }
  });
});
