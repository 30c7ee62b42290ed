// GET /auth/chat/callback refusing a sign-in: every failure redirects to the dashboard login with
// its code (chat_redirect_uri_mismatch when the platform refuses the redirect_uri) and starts no session.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sealState } from '../src/auth/oauth-state.js';
import { createSession, hashToken, SESSION_COOKIE, StateAlreadyUsed } from '../src/platform/auth/sessions.js';
import { signingKey } from '../src/platform/auth/signing-keys.js';
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

  it('oauth_state_mismatch for a missing state, a missing, different, altered or expired cookie, an unknown state', async () => {
    const real = await mint();
    const other = await mint();
    const key = await signingKey(t.db.production, 'oauth_state');
    const expired = sealState(key, 'production', other.state, { returnTo: null, popup: false }, Date.now() - 601_000);
    const [body, signature] = real.cookie.slice('cms_oauth_state='.length).split('.') as [string, string];
    const widened = { ...JSON.parse(Buffer.from(body, 'base64url').toString()), popup: true, return_to: 'https://evil.example.com/' };
    const altered = `cms_oauth_state=${Buffer.from(JSON.stringify(widened)).toString('base64url')}.${signature}`;
    const attempts = [
      callbackWith({ code: 'c' }, real.cookie),
      callbackWith({ code: 'c', state: real.state }),
      callbackWith({ code: 'c', state: real.state }, other.cookie),
      callbackWith({ code: 'c', state: 'production.unknown' }, real.cookie),
      callbackWith({ code: 'c', state: real.state }, altered),
      callbackWith({ code: 'c', state: other.state }, `cms_oauth_state=${expired}`),
      // The bare state as its own cookie (the format before the signed one) proves nothing.
      callbackWith({ code: 'c', state: real.state }, `cms_oauth_state=${real.state}`),
      callbackWith({ state: other.state }, `cms_oauth_state=${expired}`),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toBe(failedWith('oauth_state_mismatch'));
      // A callback that fails the check leaves the browser's cookie (its real attempt) alone.
      expect(res.cookies.find((c) => c.name === 'cms_oauth_state')).toBeUndefined();
    }
    expect(fake.seen(TOKEN_PATH)).toEqual([]);
    // ...and that attempt still signs in afterwards.
    const id = newChatId();
    await addAgent(t.db.production, id);
    fake.signInAs(user(id));
    const back = new URL((await fetch(real.login.headers.location!, { redirect: 'manual' })).headers.get('location')!);
    const callback = await t.app.inject({ url: back.pathname + back.search, headers: { cookie: real.cookie } });
    expect(callback.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    expect(await sessionsOf(t.db.production, id)).toEqual([{ token_hash: hashToken(callback.cookies.find((c) => c.name === SESSION_COOKIE)!.value) }]);
  });

  it('chat_authorization_denied for any provider error; chat_token_exchange_failed for a valid state without a code', async () => {
    const first = await mint();
    const denied = await callbackWith({ error: 'server_error', state: first.state }, first.cookie);
    expect(denied.headers.location).toBe(failedWith('chat_authorization_denied'));
    const second = await mint();
    const noCode = await callbackWith({ state: second.state }, second.cookie);
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
    // Refused before the platform is asked (its code is single use too) and without a second session.
    expect(fake.seen(TOKEN_PATH)).toHaveLength(1);
    expect(await sessionsOf(t.db.production, id)).toHaveLength(1);
    // Two callbacks racing past that check: the session row's unique state hash lets one through.
    const stateHash = hashToken(back.searchParams.get('state')!);
    await expect(createSession(t.db.production, 'production', id, stateHash)).rejects.toThrow(StateAlreadyUsed);
    expect(await sessionsOf(t.db.production, id)).toHaveLength(1);
  });

  it('refuses a state minted on the demo host when it comes back on the production host', async () => {
    const { state, cookie } = await mint('demo.localhost');
    expect(state).toMatch(/^demo\./);
    const res = await callbackWith({ code: 'c', state }, cookie);
    expect(res.headers.location).toBe(failedWith('oauth_state_mismatch'));
    expect(res.cookies.find((c) => c.name === 'cms_oauth_state')).toBeUndefined();
    expect(fake.seen(TOKEN_PATH)).toEqual([]);
  });

  it('answers 400 JSON instead when there is no dashboard login URL', async () => {
    const res = await proxied.app.inject({ url: '/auth/chat/callback?error=access_denied' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: 'Chat sign-in failed: chat_authorization_denied', code: 'VALIDATION_ERROR' });
  });
});
