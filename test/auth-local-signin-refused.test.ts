// Where the demo's local sign-in does not exist: with DEMO_LOCAL_SIGNIN off (the default) it is an
// unknown route everywhere; with it on, production answers as for an unknown route in every
// configuration (hosts, a proxy's forwarded host, OAuth and the demo allowlist configured), even
// for a persona's chat id that production's database holds, and writes nothing. The setting's parsing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAgent } from '../src/agents/queries.js';
import { ConfigError, parseConfig } from '../src/config.js';
import { SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { AGENT, DEMO_HOST, DIRECTOR, postLocal, sessionCount } from './helpers/local-signin.js';

const notFound = (method: string) => ({ success: false, error: `Route ${method} /auth/local not found`, code: 'NOT_FOUND' });

/** Every way a browser or a script could reach the route on `host`: each answers 404 and writes nothing. */
async function expectAbsent(t: TestApp, host: string, headers: Record<string, string> = {}) {
  const db = t.environments.resolveHost(host) === 'demo' ? t.db.demo : t.db.production;
  const before = await sessionCount(db);
  const page = await t.app.inject({ url: '/auth/local', headers: { host, ...headers } });
  expect(page.statusCode, `GET on ${host}`).toBe(404);
  expect(page.json()).toEqual(notFound('GET'));
  const head = await t.app.inject({ method: 'HEAD', url: '/auth/local', headers: { host, ...headers } });
  expect(head.statusCode, `HEAD on ${host}`).toBe(404);
  for (const chatId of [DIRECTOR, AGENT]) {
    const json = await postLocal(t.app, { chat_id: chatId }, { host, headers, json: true });
    expect(json.statusCode, `POST JSON on ${host}`).toBe(404);
    expect(json.json()).toEqual(notFound('POST'));
    expect(json.cookies.find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
  }
  expect(await sessionCount(db)).toBe(before);
  return { page };
}

describe('DEMO_LOCAL_SIGNIN off (the default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('the route does not exist on either environment, and the OpenAPI document does not name it', async () => {
    expect(t.config.demoLocalSignin).toBe(false);
    await expectAbsent(t, DEMO_HOST);
    await expectAbsent(t, 'localhost');
    // A form body is answered as on any unknown route.
    const form = await postLocal(t.app, { chat_id: DIRECTOR });
    const elsewhere = await t.app.inject({ method: 'POST', url: '/auth/nowhere', headers: { host: DEMO_HOST, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'chat_id=1' });
    expect(form.statusCode).toBe(elsewhere.statusCode);
    expect(form.json().code).toBe(elsewhere.json().code);
    const doc = (await t.app.inject({ url: '/openapi.json', headers: { host: DEMO_HOST } })).json();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/auth/'))).toEqual(['/auth/chat/login', '/auth/chat/callback', '/auth/me', '/auth/logout']);
  });
});

describe('DEMO_LOCAL_SIGNIN on: production refuses it in every configuration', () => {
  const configurations: [label: string, env: Record<string, string>, production: { host: string; headers?: Record<string, string> }[], demoHost: { host: string; headers?: Record<string, string> }][] = [
    ['the default hosts', {}, [{ host: 'localhost' }, { host: '127.0.0.1:3000' }, { host: 'LOCALHOST.' }], { host: DEMO_HOST }],
    [
      'hosts of its own, OAuth, the demo allowlist and no dashboard origins',
      {
        PRODUCTION_HOSTS: 'api.example.org,demo-api.example.org',
        DEMO_HOSTS: 'demo.example.org',
        CHAT_OAUTH_CLIENT_ID: 'client',
        CHAT_OAUTH_CLIENT_SECRET: 'secret',
        CHAT_OAUTH_REDIRECT_URI: 'https://api.example.org/auth/chat/callback',
        DEMO_ALLOWED_CHAT_IDS: '900000000000000010',
        DASHBOARD_ORIGINS: '',
        TRAINING_ORIGINS: '',
      },
      [{ host: 'api.example.org' }, { host: 'demo-api.example.org', headers: { origin: 'https://demo-api.example.org' } }],
      { host: 'demo.example.org' },
    ],
    [
      'behind a proxy (TRUST_PROXY): the forwarded host decides',
      { TRUST_PROXY: 'true', PRODUCTION_HOSTS: 'api.example.org', DEMO_HOSTS: 'demo.example.org' },
      [
        { host: 'demo.example.org', headers: { 'x-forwarded-host': 'api.example.org', 'x-forwarded-proto': 'https' } },
        { host: 'api.example.org', headers: { 'x-forwarded-host': 'api.example.org' } },
      ],
      { host: 'api.example.org', headers: { 'x-forwarded-host': 'demo.example.org' } },
    ],
  ];

  it.each(configurations)('%s', async (_label, env, productionRequests, demoRequest) => {
    const t = await createTestApp({ env: { DEMO_LOCAL_SIGNIN: 'true', ...env } });
    try {
      expect(t.config.demoLocalSignin).toBe(true);
      // The personas exist in production too, active and allowlisted: nothing but the environment stands in the way.
      for (const chatId of [DIRECTOR, AGENT]) {
        await insertAgent(t.db.production, { chat_id: chatId, name: 'Production twin', status: 'active', agent_rank: 'Director', clearance_level: 5 });
      }
      await t.db.production.query(`insert into admin_allowlist (chat_id, active) values ($1::text, true)`, [DIRECTOR]);
      for (const { host, headers } of productionRequests) {
        expect(t.environments.resolveHost(host)).not.toBeUndefined();
        await expectAbsent(t, host, headers);
      }
      const { rows } = await t.db.production.query('select count(*)::int as n from sessions');
      expect(rows).toEqual([{ n: 0 }]);
      // The same app serves it on its demo host: production's 404 is not the setting being off.
      const page = await t.app.inject({ url: '/auth/local', headers: { host: demoRequest.host, ...demoRequest.headers } });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Sign in as Morgan Hale');
      const signIn = await postLocal(t.app, { chat_id: DIRECTOR }, { host: demoRequest.host, headers: demoRequest.headers ?? {} });
      expect(signIn.statusCode).toBe(303);
      expect(signIn.cookies.find((c) => c.name === SESSION_COOKIE)!.value).toMatch(/^demo\./);
      expect(await sessionCount(t.db.production)).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('DEMO_LOCAL_SIGNIN parsing', () => {
  it('is false by default, true or false when set, and anything else stops the boot naming it', () => {
    expect(parseConfig({}).demoLocalSignin).toBe(false);
    expect(parseConfig({ DEMO_LOCAL_SIGNIN: 'true' }).demoLocalSignin).toBe(true);
    expect(parseConfig({ DEMO_LOCAL_SIGNIN: 'false' }).demoLocalSignin).toBe(false);
    for (const raw of ['yes', '1', 'TRUE', 'on']) {
      expect(() => parseConfig({ DEMO_LOCAL_SIGNIN: raw })).toThrow(ConfigError);
      expect(() => parseConfig({ DEMO_LOCAL_SIGNIN: raw })).toThrow(`DEMO_LOCAL_SIGNIN: expected true or false (got "${raw}")`);
    }
  });

  it('refuses it when the demo database is the production database', () => {
    const url = 'postgres://u@db:5432/shared';
    expect(() => parseConfig({ DEMO_LOCAL_SIGNIN: 'true', PRODUCTION_DATABASE_URL: url, DEMO_DATABASE_URL: url })).toThrow(
      'DEMO_LOCAL_SIGNIN, DEMO_DATABASE_URL: the local sign-in needs a demo database of its own, not the production one',
    );
    expect(parseConfig({ DEMO_LOCAL_SIGNIN: 'true', PRODUCTION_DATABASE_URL: url, DEMO_DATABASE_URL: `${url}-demo` }).demoLocalSignin).toBe(true);
    expect(parseConfig({ DEMO_LOCAL_SIGNIN: 'false', PRODUCTION_DATABASE_URL: url, DEMO_DATABASE_URL: url }).demoLocalSignin).toBe(false);
  });
});
