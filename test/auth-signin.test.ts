// Chat-platform sign-in: /auth/chat/login and /auth/chat/callback against a fake Discord over real
// HTTP. Cookies are carried by hand between app.inject calls, as a browser would.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, demoAgentFor, exchangeCode, sendWithRetry } from '../src/auth/chat-client.js';
import type { Db } from '../src/platform/db/types.js';
import { createSession, destroySession, findSessionAgent, hashToken, SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { createTestApp, DASHBOARD_ORIGIN, TRAINING_ORIGIN, type TestApp } from './helpers/app.js';
import {
  addAgent, browserSignIn, PROXY_PATH, runPopupPage, startFakeChatPlatform, TOKEN_PATH, USER_PATH, type FakeChatPlatform, type SignInOptions,
} from './helpers/fake-chat-platform.js';

const LOGIN_URL = `${DASHBOARD_ORIGIN}/login`;
const ALLOWED = ['900000000000000010', '900000000000000011', '900000000000000012', '900000000000000013', '900000000000000014'];
let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured, dashboard login URL set
let proxied: TestApp; // token exchange through the proxy; no dashboard origins (so no login URL); behind https
let bare: TestApp; // no OAuth application
beforeAll(async () => {
  fake = await startFakeChatPlatform();
  [t, proxied, bare] = await Promise.all([
    createTestApp({ env: { ...fake.env(), DASHBOARD_LOGIN_URL: LOGIN_URL, DEMO_ALLOWED_CHAT_IDS: ALLOWED.join(',') } }),
    createTestApp({ env: { ...fake.env(), CHAT_OAUTH_PROXY_URL: `${fake.url}${PROXY_PATH}`, DASHBOARD_ORIGINS: '', TRUST_PROXY: 'true' } }),
    createTestApp(),
  ]);
});
afterAll(async () => {
  await Promise.all([t, proxied, bare].map((app) => app?.close()));
  await fake?.close();
});
beforeEach(() => fake.reset());

let nextId = 0;
const newChatId = () => String(700000000000000000n + BigInt(++nextId));
const user = (id: string) => ({ id, username: `user${id.slice(-4)}`, global_name: null });
const sessionsOf = async (db: Db, chatId: string) =>
  (await db.query<{ token_hash: string }>('select token_hash from sessions where chat_id = $1::text', [chatId])).rows;
const signIn = ({ app = t, ...options }: SignInOptions & { app?: TestApp } = {}) => browserSignIn(app.app, options);
/** Only the login: a live state and its cookie, as the browser holds them on its way to the platform. */
async function mint(host = 'localhost') {
  const login = await t.app.inject({ url: '/auth/chat/login', headers: { host } });
  return login.cookies.find((c) => c.name === 'cms_oauth_state')!.value;
}
const callbackWith = (params: Record<string, string>, cookie?: string, host = 'localhost') =>
  t.app.inject({ url: `/auth/chat/callback?${new URLSearchParams(params)}`, headers: { host, ...(cookie ? { cookie } : {}) } });
const failedWith = (code: string) => `${LOGIN_URL}?error=${code}`;
function popupOutcome(res: { body: string; headers: Record<string, unknown> }) {
  const { posted, closed, scriptHash } = runPopupPage(res.body);
  expect(res.headers['content-security-policy']).toContain(`'sha256-${scriptHash}'`);
  return { posted, closed };
}

describe('GET /auth/chat/login', () => {
  it('stores a hashed, environment-prefixed state, binds it to the browser and redirects to the platform', async () => {
    await t.db.production.query(`insert into oauth_states (state_hash, expires_at) values ('stale', now() - interval '1 second')`);
    const returnTo = `${DASHBOARD_ORIGIN}/reports?open=1`;
    const res = await t.app.inject({ url: `/auth/chat/login?return_to=${encodeURIComponent(returnTo)}` });
    expect(res.statusCode).toBe(302);
    const cookie = res.cookies.find((c) => c.name === 'cms_oauth_state')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/auth/chat' });
    expect(cookie.secure).toBeUndefined();
    expect(cookie.value).toMatch(/^production\.[A-Za-z0-9_-]{43}$/);
    const location = new URL(res.headers.location!);
    expect(`${location.origin}${location.pathname}`).toBe(`${fake.url}/oauth2/authorize`);
    expect([...location.searchParams]).toEqual([
      ['response_type', 'code'], ['client_id', fake.env().CHAT_OAUTH_CLIENT_ID], ['scope', 'identify'],
      ['redirect_uri', 'http://localhost/auth/chat/callback'], ['state', cookie.value], ['prompt', 'none'],
    ]);
    const { rows } = await t.db.production.query<{ state_hash: string; return_to: string; popup: boolean; ttl: number }>(
      `select state_hash, return_to, popup, extract(epoch from expires_at - created_at)::int as ttl from oauth_states`,
    );
    expect(rows).toEqual([{ state_hash: hashToken(cookie.value), return_to: returnTo, popup: false, ttl: 600 }]);
  });

  it.each(['https://evil.example.com/', 'https://dashboard.example.test.evil.com/', 'javascript:alert(1)', 'ftp://dashboard.example.test/', '/relative', ''])(
    'refuses return_to %j with 400 and writes nothing',
    async (returnTo) => {
      const before = await t.db.production.query('select 1 from oauth_states');
      const res = await t.app.inject({ url: `/auth/chat/login?return_to=${encodeURIComponent(returnTo)}` });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ success: false, error: 'querystring.return_to must be a URL on an allowed dashboard or training origin', code: 'VALIDATION_ERROR' });
      expect(res.cookies).toEqual([]);
      expect((await t.db.production.query('select 1 from oauth_states')).rowCount).toBe(before.rowCount);
    },
  );

  it('answers 503 on both routes when no OAuth application is configured', async () => {
    for (const url of ['/auth/chat/login', '/auth/chat/callback?code=x&state=y']) {
      const res = await bare.app.inject({ url });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ success: false, error: 'Chat sign-in is not configured', code: 'NOT_CONFIGURED' });
    }
  });
});

describe('GET /auth/chat/callback: success', () => {
  it('exchanges the code, starts a session for the agent and redirects to return_to', async () => {
    const id = newChatId();
    await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    const returnTo = `${TRAINING_ORIGIN}/sessions/42`;
    const { callback } = await signIn({ query: `?return_to=${encodeURIComponent(returnTo)}` });
    expect(callback.statusCode).toBe(302);
    expect(callback.headers.location).toBe(returnTo);
    const session = callback.cookies.find((c) => c.name === SESSION_COOKIE)!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/', maxAge: 43200 });
    expect(session.secure).toBeUndefined();
    expect(callback.cookies.find((c) => c.name === 'cms_oauth_state')).toMatchObject({ value: '', path: '/auth/chat' });
    expect(await sessionsOf(t.db.production, id)).toEqual([{ token_hash: hashToken(session.value) }]);
    expect((await findSessionAgent(t.db.production, 'production', session.value))?.agent.chat_id).toBe(id);
    await destroySession(t.db.production, session.value);
    expect(await findSessionAgent(t.db.production, 'production', session.value)).toBeUndefined();

    const [tokenRequest] = fake.seen(TOKEN_PATH);
    expect(tokenRequest!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(tokenRequest!.form).toEqual({
      client_id: fake.env().CHAT_OAUTH_CLIENT_ID, client_secret: fake.env().CHAT_OAUTH_CLIENT_SECRET,
      grant_type: 'authorization_code', code: expect.any(String), redirect_uri: 'http://localhost/auth/chat/callback',
    });
    expect(fake.seen(USER_PATH)[0]!.headers.authorization).toMatch(/^Bearer .+/);
  });

  it('lets an onboarding agent in and, without return_to, lands on the dashboard', async () => {
    const id = newChatId();
    await addAgent(t.db.production, id, 'onboarding');
    fake.signInAs(user(id));
    const { callback } = await signIn();
    expect(callback.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    expect(await sessionsOf(t.db.production, id)).toHaveLength(1);
  });

  it('kills the session the browser carried before (session fixation)', async () => {
    const id = newChatId();
    await addAgent(t.db.production, id);
    const old = await createSession(t.db.production, 'production', id);
    fake.signInAs(user(id));
    const { callback } = await signIn({ cookie: `${SESSION_COOKIE}=${old.token}` });
    const fresh = callback.cookies.find((c) => c.name === SESSION_COOKIE)!.value;
    expect(fresh).not.toBe(old.token);
    expect(await sessionsOf(t.db.production, id)).toEqual([{ token_hash: hashToken(fresh) }]);
  });

  it('popup flow: a page that posts success to the return_to origin and closes', async () => {
    const id = newChatId();
    await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    const { callback } = await signIn({ query: `?popup=1&return_to=${encodeURIComponent(`${TRAINING_ORIGIN}/x`)}` });
    expect(callback.statusCode).toBe(200);
    expect(callback.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(popupOutcome(callback)).toEqual({
      posted: [[{ type: 'chat-auth', success: true }, TRAINING_ORIGIN]],
      closed: true,
    });
    expect(callback.cookies.find((c) => c.name === SESSION_COOKIE)).toBeDefined();
    expect(await sessionsOf(t.db.production, id)).toHaveLength(1);
  });

  it('popup flow: a failure is posted to the dashboard origin, with the code only', async () => {
    fake.signInAs(null);
    const { callback } = await signIn({ query: '?popup=1' });
    expect(callback.statusCode).toBe(200);
    expect(callback.body).not.toContain('access_denied');
    expect(popupOutcome(callback)).toEqual({
      posted: [[{ type: 'chat-auth', success: false, error: 'chat_authorization_denied' }, DASHBOARD_ORIGIN]],
      closed: true,
    });
    expect(callback.cookies.find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
  });
});

describe('GET /auth/chat/callback: failures redirect to the dashboard login with a code', () => {
  const cases: [string, string, (id: string) => Promise<void> | void][] = [
    ['chat_authorization_denied', 'the user denies', () => fake.signInAs(null)],
    ['chat_redirect_uri_mismatch', 'the platform refuses the redirect_uri', () => fake.scriptToken({ kind: 'redirect-mismatch' })],
    ['chat_token_exchange_failed', 'the platform refuses the code', () => fake.scriptToken({ kind: 'invalid-grant' })],
    ['chat_user_fetch_failed', 'the user endpoint refuses', () => fake.scriptUser({ kind: 'invalid-grant' })],
    ['not_a_svc_agent', 'no agent has that chat id', () => undefined],
    ['agent_not_active', 'the agent is suspended', (id) => addAgent(t.db.production, id, 'suspended')],
  ];
  it.each(cases)('%s when %s', async (code, _when, arrange) => {
    const id = newChatId();
    if (code !== 'not_a_svc_agent' && code !== 'agent_not_active') await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    await arrange(id);
    const { callback } = await signIn();
    expect(callback.statusCode).toBe(302);
    expect(callback.headers.location).toBe(failedWith(code));
    expect(callback.cookies.find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
    expect(await sessionsOf(t.db.production, id)).toEqual([]);
  });

  it('oauth_state_mismatch for a missing state, a missing or different cookie, an unknown or expired state', async () => {
    const state = { value: await mint() };
    const other = await mint();
    const cookie = `cms_oauth_state=${state.value}`;
    await t.db.production.query(`update oauth_states set expires_at = now() - interval '1 second' where state_hash = $1::text`, [hashToken(other)]);
    const attempts = [
      callbackWith({ code: 'c' }, cookie),
      callbackWith({ code: 'c', state: state.value }),
      callbackWith({ code: 'c', state: state.value }, `cms_oauth_state=${other}`),
      callbackWith({ code: 'c', state: 'production.unknown' }, 'cms_oauth_state=production.unknown'),
      callbackWith({ code: 'c', state: other }, `cms_oauth_state=${other}`),
      callbackWith({ state: other }, `cms_oauth_state=${other}`),
    ];
    for (const res of await Promise.all(attempts)) expect(res.headers.location).toBe(failedWith('oauth_state_mismatch'));
    expect(fake.seen(TOKEN_PATH)).toEqual([]);
    // A callback that fails the cookie check does not burn the browser's real attempt.
    expect((await t.db.production.query('select 1 from oauth_states where state_hash = $1::text', [hashToken(state.value)])).rowCount).toBe(1);
  });

  it('chat_authorization_denied for any provider error; chat_token_exchange_failed for a valid state without a code', async () => {
    const first = await mint();
    const denied = await callbackWith({ error: 'server_error', state: first }, `cms_oauth_state=${first}`);
    expect(denied.headers.location).toBe(failedWith('chat_authorization_denied'));
    const second = await mint();
    const noCode = await callbackWith({ state: second }, `cms_oauth_state=${second}`);
    expect(noCode.headers.location).toBe(failedWith('chat_token_exchange_failed'));
  });

  it('refuses a state a second time (single use)', async () => {
    const id = newChatId();
    await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    const { back, cookies, callback } = await signIn();
    expect(callback.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    const replay = await t.app.inject({ url: back.pathname + back.search, headers: { cookie: cookies } });
    expect(replay.headers.location).toBe(failedWith('oauth_state_mismatch'));
    expect(await sessionsOf(t.db.production, id)).toHaveLength(1);
  });

  it('refuses a state minted on the demo host when it comes back on the production host', async () => {
    const state = await mint('demo.localhost');
    expect(state).toMatch(/^demo\./);
    const res = await callbackWith({ code: 'c', state }, `cms_oauth_state=${state}`);
    expect(res.headers.location).toBe(failedWith('oauth_state_mismatch'));
    expect((await t.db.demo.query('select 1 from oauth_states where state_hash = $1::text', [hashToken(state)])).rowCount).toBe(1);
  });

  it('answers 400 JSON instead when there is no dashboard login URL', async () => {
    const res = await proxied.app.inject({ url: '/auth/chat/callback?error=access_denied' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: 'Chat sign-in failed: chat_authorization_denied', code: 'VALIDATION_ERROR' });
  });
});

describe('token exchange: proxy and bounded retry', () => {
  const signInAgent = async () => {
    const id = newChatId();
    await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    return id;
  };
  const gaps = () => fake.seen(TOKEN_PATH).map((r, i, all) => (i === 0 ? 0 : r.at - all[i - 1]!.at)).slice(1);

  it('waits out a 429 (Retry-After header first, else the body retry_after) and then signs in', async () => {
    await signInAgent();
    fake.scriptToken({ kind: 'rate-limit', retryAfterHeader: '1', retryAfter: 0.2 });
    expect((await signIn()).callback.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    expect(fake.seen(TOKEN_PATH)).toHaveLength(2);
    expect(gaps()[0]).toBeGreaterThanOrEqual(990);
    fake.reset();
    const id = await signInAgent();
    fake.scriptToken({ kind: 'rate-limit', retryAfter: 0.2 });
    expect((await signIn()).callback.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    expect(gaps()).toHaveLength(1);
    expect(gaps()[0]).toBeGreaterThanOrEqual(190);
    expect(await sessionsOf(t.db.production, id)).toHaveLength(1);
  });

  it('does not wait for a Retry-After beyond 5 s: chat_token_exchange_failed after one try', async () => {
    await signInAgent();
    fake.scriptToken({ kind: 'rate-limit', retryAfterHeader: '30', retryAfter: 30 });
    const started = performance.now();
    expect((await signIn()).callback.headers.location).toBe(failedWith('chat_token_exchange_failed'));
    expect(performance.now() - started).toBeLessThan(1000);
    expect(fake.seen(TOKEN_PATH)).toHaveLength(1);
  });

  it('gives up after exactly 3 tries on 5xx, backing off 250 ms then 500 ms', async () => {
    const id = await signInAgent();
    fake.scriptToken({ kind: 'server-error' }, { kind: 'server-error' }, { kind: 'server-error' });
    expect((await signIn()).callback.headers.location).toBe(failedWith('chat_token_exchange_failed'));
    expect(fake.seen(TOKEN_PATH)).toHaveLength(3);
    const [first, second] = gaps();
    expect(first).toBeGreaterThanOrEqual(240);
    expect(second).toBeGreaterThanOrEqual(490);
    expect(await sessionsOf(t.db.production, id)).toEqual([]);
  });

  it('goes through the proxy when configured (never the token URL), with Secure cookies behind https', async () => {
    const id = newChatId();
    await addAgent(proxied.db.production, id);
    fake.signInAs(user(id));
    const { login, callback } = await signIn({ app: proxied, query: `?return_to=${encodeURIComponent(`${TRAINING_ORIGIN}/`)}`, headers: { 'x-forwarded-proto': 'https' } });
    expect(login.cookies[0]).toMatchObject({ name: 'cms_oauth_state', secure: true });
    expect(callback.headers.location).toBe(`${TRAINING_ORIGIN}/`);
    expect(callback.cookies.find((c) => c.name === SESSION_COOKIE)).toMatchObject({ secure: true, httpOnly: true });
    expect(fake.seen(TOKEN_PATH)).toEqual([]);
    expect(fake.seen(PROXY_PATH)[0]!.form).toMatchObject({ grant_type: 'authorization_code', redirect_uri: 'http://localhost/auth/chat/callback' });
    expect(await sessionsOf(proxied.db.production, id)).toHaveLength(1);
  });

  it('fails a try that times out or cannot connect, and stops at the total budget', async () => {
    const oauth = t.config.chatOAuth!;
    fake.scriptToken({ kind: 'hang' }, { kind: 'hang' }, { kind: 'hang' });
    const quick = { ...DEFAULT_RETRY, tryTimeoutMs: 100, backoffMs: [10, 10] };
    await expect(exchangeCode(oauth, 'c', quick)).rejects.toMatchObject({ code: 'chat_token_exchange_failed', message: expect.stringContaining('timed out') });
    expect(fake.seen(TOKEN_PATH)).toHaveLength(3);
    await expect(exchangeCode({ ...oauth, tokenUrl: 'http://127.0.0.1:1/token' }, 'c', quick)).rejects.toMatchObject({ code: 'chat_token_exchange_failed' });
    // A fake clock: two 5 s pauses (each allowed alone) would reach the 10 s budget: the second is refused.
    let now = 0;
    const sleeps: number[] = [];
    const clock = { ...DEFAULT_RETRY, now: () => now, sleep: async (ms: number) => void sleeps.push((now += ms)) };
    let sends = 0;
    const send = async () => (sends++, new Response('{"retry_after":5}', { status: 429 }));
    await expect(sendWithRetry(send, clock)).rejects.toThrow(/10000 ms budget/);
    expect({ sends, sleeps }).toEqual({ sends: 2, sleeps: [5000] });
  });
});

describe('demo environment', () => {
  it('maps allowed real ids to the four demo agents by position, cycling', () => {
    expect(ALLOWED.map((id) => demoAgentFor(id, ALLOWED))).toEqual([
      '100000000000000001', '100000000000000002', '100000000000000003', '100000000000000004', '100000000000000001',
    ]);
    expect(demoAgentFor('123', ALLOWED)).toBeUndefined();
  });

  it('signs an allowed identity in as its demo agent; refuses anyone else with demo_not_authorized', async () => {
    for (const [i, id] of ['100000000000000001', '100000000000000002', '100000000000000003', '100000000000000004'].entries()) {
      await addAgent(t.db.demo, id, i === 3 ? 'onboarding' : 'active');
    }
    fake.signInAs(user(ALLOWED[1]!));
    const { login, back, callback } = await signIn({ host: 'demo.localhost' });
    // The demo's sign-in comes back to the demo host (the configured callback is production's).
    expect(new URL(login.headers.location!).searchParams.get('redirect_uri')).toBe('http://demo.localhost/auth/chat/callback');
    expect(back.origin).toBe('http://demo.localhost');
    expect(callback.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    const token = callback.cookies.find((c) => c.name === SESSION_COOKIE)!.value;
    expect(token).toMatch(/^demo\./);
    expect(await sessionsOf(t.db.demo, '100000000000000002')).toEqual([{ token_hash: hashToken(token) }]);
    expect(await findSessionAgent(t.db.production, 'production', token)).toBeUndefined();

    const stranger = newChatId();
    await addAgent(t.db.demo, stranger);
    fake.signInAs(user(stranger));
    const refused = await signIn({ host: 'demo.localhost' });
    expect(refused.callback.headers.location).toBe(failedWith('demo_not_authorized'));
    expect(await sessionsOf(t.db.demo, stranger)).toEqual([]);
  });
});

it('documents both routes under Authentication in /openapi.json', async () => {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json();
  for (const path of ['/auth/chat/login', '/auth/chat/callback']) expect(doc.paths[path].get.tags).toEqual(['Authentication']);
  expect(doc.paths['/auth/chat/callback'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['code', 'state', 'error']));
});
