// The token exchange behind GET /auth/chat/callback: through the proxy when configured, and its
// bounded retry (429 Retry-After, 5xx backoff, timeouts, the total budget).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, exchangeCode, sendWithRetry } from '../src/auth/chat-client.js';
import { SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { DASHBOARD_ORIGIN, TRAINING_ORIGIN, type TestApp } from './helpers/app.js';
import { addAgent, PROXY_PATH, TOKEN_PATH, type FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { openSignInApps, proxiedEnv, signInHelpers } from './helpers/signin.js';

let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured, dashboard login URL set
let proxied: TestApp; // token exchange through the proxy; no dashboard origins (so no login URL); behind https
let close: () => Promise<void>;
beforeAll(async () => void ({ fake, t, close, proxied } = await openSignInApps((f) => ({ proxied: { env: proxiedEnv(f) } }))));
afterAll(() => close?.());
beforeEach(() => fake.reset());

const { newChatId, user, sessionsOf, signIn, failedWith } = signInHelpers(() => ({ t }));

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
