// Where broadcasts go (issue 12): to a subscriber of another instance through PostgreSQL's
// NOTIFY (PostgreSQL only: two instances need a shared database), and, in external Supabase mode,
// to the project's REST broadcast endpoint (a local stand-in) without the request waiting on it.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RealtimeClient } from '@supabase/realtime-js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { COOL_DOWN_MS } from '../src/realtime/supabase.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { connect, listen, SECRETS, subscribe, token } from './helpers/realtime.js';
import { onPostgres } from './helpers/stores.js';
import { createSession, newTrainee, newTrainer, post } from './helpers/training.js';

describe.runIf(onPostgres)('broadcasts across instances (PostgreSQL)', () => {
  let a: TestApp;
  let b: TestApp;
  let client: RealtimeClient;
  beforeAll(async () => {
    a = await createTestApp({ env: SECRETS });
    b = await createTestApp({ env: SECRETS, openDb: { production: async () => openPostgres({ connectionString: a.urls.production! }) } });
  });
  afterAll(async () => {
    await client?.disconnect();
    await b.close();
    await a.close();
  });

  it('a client on instance B receives the events of a session changed through instance A', async () => {
    const trainer = await newTrainer(a);
    const trainee = await newTrainee(a);
    client = connect(await listen(b));
    const side = await subscribe(client, `training:user:${trainee.agent.chat_id}`, await token(b, trainee));
    expect(side.statuses).toEqual(['SUBSCRIBED']);
    const id = await createSession(a, trainer, trainee);
    await post(a, `/training/sessions/${id}/start`, trainer);
    await vi.waitFor(() => expect(side.received.map((r) => r.event)).toEqual(['SESSION_CREATED', 'SESSION_STARTED']));
    expect(side.received[1]!.payload).toMatchObject({ session_id: id, event: { type: 'SESSION_STARTED' } });
  });
});

describe('external Supabase mode', () => {
  let supabase: Server;
  let answer = 202;
  const requests: { url: string; headers: IncomingMessage['headers']; body: { messages: { topic: string; event: string; payload: { session_id: number }; private: boolean }[] } }[] = [];
  let t: TestApp;
  const logged: string[] = [];

  beforeAll(async () => {
    supabase = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests.push({ url: req.url!, headers: req.headers, body: JSON.parse(body) as never });
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => supabase.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(supabase.address() as AddressInfo).port}`;
    const { pino } = await import('pino');
    const { Writable } = await import('node:stream');
    const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => void (logged.push(String(chunk)), done()) }));
    t = await createTestApp({
      env: { ...SECRETS, PRODUCTION_REALTIME_URL: url, PRODUCTION_REALTIME_ANON_KEY: 'project-anon-key', PRODUCTION_SUPABASE_SERVICE_KEY: 'project-service-key' },
      logger,
    });
  });
  afterAll(async () => {
    await t.close();
    await new Promise((resolve) => supabase.close(resolve));
  });

  it('points the client at the project and sends each broadcast to its REST endpoint as private messages with the service key', async () => {
    const trainer = await newTrainer(t);
    const trainee = await newTrainee(t);
    const config = await t.app.inject({ method: 'GET', url: '/training/realtime-config', headers: trainee.headers });
    expect(config.json()).toEqual({ success: true, backend_url: `http://127.0.0.1:${(supabase.address() as AddressInfo).port}`, anon_key: 'project-anon-key', token_path: '/training/realtime-token' });
    const id = await createSession(t, trainer, trainee);
    await vi.waitFor(() => expect(requests).toHaveLength(1));
    expect(requests[0]!.url).toBe('/realtime/v1/api/broadcast');
    expect(requests[0]!.headers).toMatchObject({ apikey: 'project-service-key', authorization: 'Bearer project-service-key', 'content-type': 'application/json' });
    expect(requests[0]!.body.messages.map((m) => [m.topic, m.event, m.private, m.payload.session_id])).toEqual([
      [`training:user:${trainer.agent.chat_id}`, 'SESSION_CREATED', true, id],
      [`training:user:${trainee.agent.chat_id}`, 'SESSION_CREATED', true, id],
    ]);
  });

  it('a failure is logged and counted, never fails the request, and pauses sending for the cool-down (no retry storm)', async () => {
    answer = 500;
    const trainer = await newTrainer(t);
    const id = await createSession(t, trainer, await newTrainee(t));
    await vi.waitFor(() => expect(logged.some((l) => l.includes('realtime broadcast to Supabase failed'))).toBe(true));
    const sent = requests.length;
    answer = 202;
    // Within the cool-down: answered, committed, not sent.
    const started = await post(t, `/training/sessions/${id}/start`, trainer);
    expect(started.statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(requests).toHaveLength(sent);
    const director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
    const health = await t.app.inject({ method: 'GET', url: '/admin/health', headers: director.headers });
    expect(health.json().api.realtime.broadcast_failures).toBe(1);
    expect(COOL_DOWN_MS).toBeGreaterThan(200);
  });
});
