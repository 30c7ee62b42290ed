// GET /auth/chat/callback refusing a sign-in: every failure redirects to the dashboard login with
// its code (chat_redirect_uri_mismatch when the platform refuses the redirect_uri) and starts no session.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hashToken, SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { DASHBOARD_ORIGIN, type TestApp } from './helpers/app.js';
import { addAgent, TOKEN_PATH, type FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { openSignInApps, proxiedEnv, signInEnv, signInHelpers } from './helpers/signin.js';

let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured, dashboard login URL set
let proxied: TestApp; // token exchange through the proxy; no dashboard origins (so no login URL); behind https
let unregistered: TestApp; // a CHAT_OAUTH_REDIRECT_URI the platform does not hold
let close: () => Promise<void>;
const UNREGISTERED = 'http://localhost:8080/auth/chat/callback';
beforeAll(async () =>
  void ({ fake, t, close, proxied, unregistered } = await openSignInApps((f) => ({
    proxied: { env: proxiedEnv(f) },
    unregistered: { env: { ...signInEnv(f), CHAT_OAUTH_REDIRECT_URI: UNREGISTERED } },
  }))));
afterAll(() => close?.());
beforeEach(() => fake.reset());

const { newChatId, user, sessionsOf, signIn, mint, callbackWith, failedWith } = signInHelpers(() => ({ t }));

describe('GET /auth/chat/callback: failures redirect to the dashboard login with a code', () => {
  const cases: [string, string, (id: string) => Promise<void> | void][] = [
    ['chat_authorization_denied', 'the user denies', () => fake.signInAs(null)],
    ['chat_redirect_uri_mismatch', 'the platform refuses the redirect_uri as Discord does (invalid_request)', () => fake.scriptToken({ kind: 'redirect-mismatch' })],
    ['chat_redirect_uri_mismatch', 'the platform refuses the redirect_uri with invalid_grant', () => fake.scriptToken({ kind: 'redirect-mismatch', error: 'invalid_grant' })],
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

  it('chat_redirect_uri_mismatch when the configured redirect_uri is not registered (the platform answers invalid_request)', async () => {
    const id = newChatId();
    await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    const { callback } = await signIn({ app: unregistered });
    expect(fake.seen(TOKEN_PATH).map((r) => r.form.redirect_uri)).toEqual([UNREGISTERED]);
    expect(callback.statusCode).toBe(302);
    expect(callback.headers.location).toBe(failedWith('chat_redirect_uri_mismatch'));
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
