// Realtime (issue 12): tokens, the client's configuration and the built-in hub, spoken to by the
// real @supabase/realtime-js client on both serializers; training events arrive on the channels
// of their audience, and every refusal delivers nothing.
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RealtimeClient } from '@supabase/realtime-js';
import { mintToken } from '../src/realtime/tokens.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { connect, listen, SECRETS, subscribe, token } from './helpers/realtime.js';
import { createSession, importDemoScenarios, newTrainee, newTrainer, post } from './helpers/training.js';

describe('realtime', () => {
  let t: TestApp;
  let base: string;
  let trainer: Person;
  let trainee: Person;
  let scenarios: Record<string, number>;
  const clients: RealtimeClient[] = [];
  const client = (options: Parameters<typeof connect>[1] = {}) => {
    const c = connect(base, options);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await createTestApp({ env: SECRETS });
    base = await listen(t);
    scenarios = await importDemoScenarios(t.db.production);
    trainer = await newTrainer(t);
    trainee = await newTrainee(t);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.disconnect()));
    await t.close();
  });

  describe('config and token', () => {
    it('GET /training/realtime-config points the client at this service for the request’s host', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/training/realtime-config', headers: trainer.headers });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true, backend_url: 'http://localhost', anon_key: expect.any(String), token_path: '/training/realtime-token' });
      // Like a Supabase project's anon key: a JWT with role anon, of this environment (it reads no channel).
      expect(decodeJwt(res.json().anon_key)).toEqual({ role: 'anon', iss: 'case-management:production' });
    });

    it('GET /training/realtime-token mints an HS256 JWT: role authenticated, sub the chat id, 600 s', async () => {
      const before = Math.floor(Date.now() / 1000);
      const res = await t.app.inject({ method: 'GET', url: '/training/realtime-token', headers: trainee.headers });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.ttl).toBe(600);
      const claims = decodeJwt(body.token);
      expect(claims).toMatchObject({ role: 'authenticated', sub: trainee.agent.chat_id });
      expect(claims.exp! - claims.iat!).toBe(600);
      expect(claims.iat).toBeGreaterThanOrEqual(before);
      expect(body.expires_at).toBe(new Date(claims.exp! * 1000).toISOString());
      const bot = await t.app.inject({ method: 'GET', url: '/training/realtime-token', headers: { host: 'localhost', authorization: PRODUCTION_KEY } });
      expect([bot.statusCode, bot.json().code]).toEqual([403, 'SESSION_REQUIRED']);
    });

    it('answers 503 when the environment has no signing secret', async () => {
      const bare = await createTestApp();
      try {
        const person = await newTrainer(bare);
        for (const url of ['/training/realtime-token', '/training/realtime-config']) {
          const res = await bare.app.inject({ method: 'GET', url, headers: person.headers });
          expect(res.statusCode).toBe(503);
          expect(res.json()).toEqual({ success: false, error: 'Realtime is not configured', code: 'NOT_CONFIGURED' });
        }
      } finally {
        await bare.close();
      }
    });
  });

  for (const vsn of ['1.0.0', '2.0.0'] as const) {
    describe(`the hub with realtime-js (vsn ${vsn})`, () => {
      it('delivers a session’s lifecycle to both users’ channels and evidence overrides to the session channel', async () => {
        const learner = await newTrainee(t);
        const coach = await newTrainer(t, 'Coach');
        const trainerSide = await subscribe(client({ vsn }), `training:user:${coach.agent.chat_id}`, await token(t, coach));
        const traineeSide = await subscribe(client({ vsn }), `training:user:${learner.agent.chat_id}`, await token(t, learner));
        expect([trainerSide.statuses, traineeSide.statuses]).toEqual([['SUBSCRIBED'], ['SUBSCRIBED']]);
        const id = await createSession(t, coach, learner, scenarios['first-response']);
        const room = await subscribe(client({ vsn }), `training:session:${id}`, await token(t, learner));
        expect(room.statuses).toEqual(['SUBSCRIBED']);
        await post(t, `/training/sessions/${id}/start`, coach);
        await post(t, `/training/sessions/${id}/evidence/witness/release`, coach);
        await post(t, `/training/sessions/${id}/evaluate`, coach, { score: 90, result: 'pass' });
        const expected = ['SESSION_CREATED', 'SESSION_STARTED', 'SCENARIO_ACTIVATED', 'SESSION_EVALUATED'];
        await vi.waitFor(() => {
          expect(trainerSide.received.map((r) => r.event)).toEqual(expected);
          expect(traineeSide.received.map((r) => r.event)).toEqual(expected);
          expect(room.received.map((r) => r.event)).toEqual(['EVIDENCE_RELEASED']);
        });
        expect(traineeSide.received[0]!.payload).toMatchObject({ session_id: id, event: { type: 'SESSION_CREATED', data: { session_id: id } } });
        expect(room.received[0]!.payload).toMatchObject({ session_id: id, event: { type: 'TRAINER_RELEASED_EVIDENCE', data: { evidence: 'witness' } } });
      });

      it('refuses joins without a token, with a forged, expired or other-environment token, to another user’s or session’s topic, and public joins', async () => {
        const learner = await newTrainee(t);
        const id = await createSession(t, trainer, learner);
        const valid = await token(t, learner);
        const forged = await new SignJWT({ role: 'authenticated' }).setProtectedHeader({ alg: 'HS256' }).setSubject(learner.agent.chat_id).setIssuer('case-management:production').setExpirationTime('10m').sign(new TextEncoder().encode('x'.repeat(40)));
        const expired = await new SignJWT({ role: 'authenticated' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(learner.agent.chat_id)
          .setIssuer('case-management:production')
          .setIssuedAt(Math.floor(Date.now() / 1000) - 700)
          .setExpirationTime(Math.floor(Date.now() / 1000) - 100)
          .sign(new TextEncoder().encode(SECRETS.PRODUCTION_REALTIME_SIGNING_SECRET));
        // A real token of the demo environment (its own session, on its own host).
        const demoPerson = await signedIn(t, { env: 'demo', is_trainer: true });
        const demoRes = await t.app.inject({ method: 'GET', url: '/training/realtime-token', headers: demoPerson.headers });
        expect(demoRes.statusCode).toBe(200);
        const demoToken = demoRes.json().token as string;
        const cases: [string, string | undefined, string][] = [
          // No token of the join's own: the socket's apikey stands in, as on Supabase (here not a JWT).
          [`training:user:${learner.agent.chat_id}`, undefined, 'MalformedJWT: The token provided is not a valid JWT'],
          [`training:user:${learner.agent.chat_id}`, forged, 'JwtSignatureError: Failed to validate JWT signature'],
          [`training:user:${learner.agent.chat_id}`, expired, 'InvalidJWTToken: Token has expired'],
          [`training:user:${demoPerson.agent.chat_id}`, demoToken, 'JwtSignatureError'],
          // The demo environment's issuer, even under the production secret.
          [`training:user:${demoPerson.agent.chat_id}`, (await mintToken('demo', SECRETS.PRODUCTION_REALTIME_SIGNING_SECRET, demoPerson.agent.chat_id)).token, 'InvalidJWTToken: unexpected "iss" claim value'],
          [`training:user:${trainer.agent.chat_id}`, valid, `Unauthorized: You do not have permissions to read from this Channel topic: training:user:${trainer.agent.chat_id}`],
          [`training:session:${id + 1000}`, valid, 'Unauthorized'],
        ];
        const refused: string[] = [];
        // Each client leaves its channel (no rejoin) at once; their sockets close together below
        // (realtime-js polls a closing socket every 150 ms: one after the other, a second in all).
        const removals: Promise<unknown>[] = [];
        for (const [topic, accessToken, reason] of cases) {
          const c = client({ vsn });
          const sub = await subscribe(c, topic, accessToken);
          expect(sub.statuses[0], topic).toBe('CHANNEL_ERROR');
          expect(sub.errors[0]).toContain(reason);
          refused.push(topic);
          removals.push(c.removeAllChannels());
        }
        const open = client({ vsn });
        await open.setAuth(valid);
        const publicJoin = await new Promise<string>((resolve) => {
          open.channel(`training:user:${learner.agent.chat_id}`).subscribe((status, err) => status !== 'SUBSCRIBED' && resolve(err?.message ?? status));
        });
        expect(publicJoin).toContain('PrivateOnly');
        await Promise.all([...removals, open.removeAllChannels()]);
        // Nothing reached a refused topic: the session's owner gets its events, nobody else.
        await post(t, `/training/sessions/${id}/start`, trainer);
        expect(refused).toHaveLength(cases.length);
      });
    });
  }
});
