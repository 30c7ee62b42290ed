// The sign-in routes' rate limit (issue 28): SIGNIN_RATE_LIMIT_PER_MINUTE (30 by default) requests
// per client address per minute on each sign-in route, then 429 RATE_LIMITED in the envelope with
// Retry-After, writing nothing; other addresses, other routes and the rest of the API go on. The
// client address is the socket's, or X-Forwarded-For's under TRUST_PROXY.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { startFakeChatPlatform, type FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { DEMO_HOST, DIRECTOR } from './helpers/local-signin.js';
import { signInEnv } from './helpers/signin.js';
import { rowCounts } from './helpers/tables.js';

let fake: FakeChatPlatform;
let t: TestApp; // the default limit, no proxy
let proxied: TestApp; // TRUST_PROXY, a limit of 5
beforeAll(async () => {
  fake = await startFakeChatPlatform();
  const env = { ...signInEnv(fake), DEMO_LOCAL_SIGNIN: 'true' };
  // '' is unset: the default, 30 a minute.
  [t, proxied] = await Promise.all([
    createTestApp({ env: { ...env, SIGNIN_RATE_LIMIT_PER_MINUTE: '' } }),
    createTestApp({ env: { ...env, SIGNIN_RATE_LIMIT_PER_MINUTE: '5', TRUST_PROXY: 'true' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([t?.close(), proxied?.close()]);
  await fake?.close();
});

interface Route {
  name: string;
  send(app: TestApp, headers: Record<string, string>, remoteAddress?: string): Promise<LightMyRequestResponse>;
  served: number;
}

const ROUTES: Route[] = [
  { name: 'GET /auth/chat/login', served: 302, send: (a, headers, remoteAddress) => a.app.inject({ url: '/auth/chat/login', headers, remoteAddress }) },
  { name: 'GET /auth/chat/callback', served: 302, send: (a, headers, remoteAddress) => a.app.inject({ url: '/auth/chat/callback?code=c&state=s', headers, remoteAddress }) },
  { name: 'GET /auth/local', served: 200, send: (a, headers, remoteAddress) => a.app.inject({ url: '/auth/local', headers: { host: DEMO_HOST, ...headers }, remoteAddress }) },
  {
    name: 'POST /auth/local',
    served: 303,
    send: (a, headers, remoteAddress) =>
      a.app.inject({ method: 'POST', url: '/auth/local', headers: { host: DEMO_HOST, 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: `chat_id=${DIRECTOR}`, remoteAddress }),
  },
];

const everything = async (app: TestApp) => ({ production: await rowCounts(app.db.production), demo: await rowCounts(app.db.demo) });

function expectLimited(res: LightMyRequestResponse, route: string) {
  expect(res.statusCode, route).toBe(429);
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter, route).toBeGreaterThanOrEqual(1);
  expect(retryAfter, route).toBeLessThanOrEqual(60);
  expect(res.json(), route).toEqual({ success: false, error: `Too many sign-in requests from this address: retry in ${retryAfter} s`, code: 'RATE_LIMITED' });
  expect(res.cookies, route).toEqual([]);
}

describe('the sign-in rate limit', () => {
  it('gives each client address 30 requests a minute on each sign-in route, then 429 with Retry-After, writing nothing', async () => {
    const client = '198.51.100.7';
    for (const route of ROUTES) {
      // Every route counts its own: the routes limited before this one do not eat into its 30.
      for (let i = 0; i < 30; i++) expect((await route.send(t, {}, client)).statusCode, `${route.name} #${i + 1}`).toBe(route.served);
      const before = await everything(t);
      expectLimited(await route.send(t, {}, client), route.name);
      expect(await everything(t), route.name).toEqual(before);
      // X-Forwarded-For is not believed without TRUST_PROXY: no way out by naming another address.
      expectLimited(await route.send(t, { 'x-forwarded-for': '192.0.2.1' }, client), route.name);
      // Another address is served meanwhile.
      expect((await route.send(t, {}, '198.51.100.8')).statusCode, route.name).toBe(route.served);
    }
    // The rest of the API is not limited.
    for (let i = 0; i < 40; i++) {
      const res = await t.app.inject({ url: '/generate/case', headers: { authorization: PRODUCTION_KEY }, remoteAddress: client });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('behind a proxy (TRUST_PROXY), counts the address X-Forwarded-For gives; SIGNIN_RATE_LIMIT_PER_MINUTE sets the limit', async () => {
    for (const route of ROUTES) {
      const from = (address: string) => route.send(proxied, { 'x-forwarded-for': address });
      for (let i = 0; i < 5; i++) expect((await from('203.0.113.5')).statusCode, route.name).toBe(route.served);
      expectLimited(await from('203.0.113.5'), route.name);
      // The same proxy (one socket address) forwarding another client: served.
      expect((await from('203.0.113.6')).statusCode, route.name).toBe(route.served);
    }
  });

  it('documents 429 on each sign-in route', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    for (const [path, method] of [['/auth/chat/login', 'get'], ['/auth/chat/callback', 'get'], ['/auth/local', 'get'], ['/auth/local', 'post']] as const) {
      expect(Object.keys(doc.paths[path][method].responses), `${method} ${path}`).toContain('429');
    }
  });
});
