// Shared by the chat sign-in tests (test/auth-signin-*.test.ts): the apps' configuration against
// the fake platform, and the browser-side helpers, on the apps `apps()` returns (built in beforeAll).
import { expect } from 'vitest';
import type { Db } from '../../src/platform/db/types.js';
import { createTestApp, DASHBOARD_ORIGIN, type TestApp, type TestAppOptions } from './app.js';
import { browserSignIn, PROXY_PATH, runPopupPage, startFakeChatPlatform, type FakeChatPlatform, type SignInOptions } from './fake-chat-platform.js';

export const LOGIN_URL = `${DASHBOARD_ORIGIN}/login`;
export const ALLOWED = ['900000000000000010', '900000000000000011', '900000000000000012', '900000000000000013', '900000000000000014'];

/** OAuth configured, dashboard login URL set, demo sign-in allowed for ALLOWED. */
export const signInEnv = (fake: FakeChatPlatform) => ({ ...fake.env(), DASHBOARD_LOGIN_URL: LOGIN_URL, DEMO_ALLOWED_CHAT_IDS: ALLOWED.join(',') });
/** Token exchange through the proxy; no dashboard origins (so no login URL); behind https. */
export const proxiedEnv = (fake: FakeChatPlatform) => ({ ...fake.env(), CHAT_OAUTH_PROXY_URL: `${fake.url}${PROXY_PATH}`, DASHBOARD_ORIGINS: '', TRUST_PROXY: 'true' });

/**
 * A sign-in test file's fake chat platform and apps: `t` (signInEnv) and the others `more` names,
 * opened together; `close` closes them all and the platform.
 */
export async function openSignInApps<K extends string = never>(more: (fake: FakeChatPlatform) => Record<K, TestAppOptions> = () => ({}) as Record<K, TestAppOptions>) {
  const fake = await startFakeChatPlatform();
  const options = more(fake);
  const names = Object.keys(options) as K[];
  const [t, ...others] = await Promise.all([createTestApp({ env: signInEnv(fake) }), ...names.map((name) => createTestApp(options[name]))]);
  const close = async () => {
    await Promise.all([t!, ...others].map((app) => app.close()));
    await fake.close();
  };
  return { fake, t: t!, close, ...(Object.fromEntries(names.map((name, i) => [name, others[i]!])) as Record<K, TestApp>) };
}

export function signInHelpers(apps: () => { t: TestApp }) {
  let nextId = 0;
  const newChatId = () => String(700000000000000000n + BigInt(++nextId));
  const user = (id: string) => ({ id, username: `user${id.slice(-4)}`, global_name: null });
  const sessionsOf = async (db: Db, chatId: string) =>
    (await db.query<{ token_hash: string }>('select token_hash from sessions where chat_id = $1::text', [chatId])).rows;
  const signIn = ({ app = apps().t, ...options }: SignInOptions & { app?: TestApp } = {}) => browserSignIn(app.app, options);
  /**
   * Only the login: a live state (as sent to the platform) and its signed cookie (as a Cookie
   * header), as the browser holds them on its way to the platform.
   */
  async function mint(host = 'localhost') {
    const login = await apps().t.app.inject({ url: '/auth/chat/login', headers: { host } });
    const state = new URL(login.headers.location!).searchParams.get('state')!;
    return { state, cookie: `cms_oauth_state=${login.cookies.find((c) => c.name === 'cms_oauth_state')!.value}`, login };
  }
  const callbackWith = (params: Record<string, string>, cookie?: string, host = 'localhost') =>
    apps().t.app.inject({ url: `/auth/chat/callback?${new URLSearchParams(params)}`, headers: { host, ...(cookie ? { cookie } : {}) } });
  const failedWith = (code: string) => `${LOGIN_URL}?error=${code}`;
  function popupOutcome(res: { body: string; headers: Record<string, unknown> }) {
    const { posted, closed, scriptHash } = runPopupPage(res.body);
    expect(res.headers['content-security-policy']).toContain(`'sha256-${scriptHash}'`);
    return { posted, closed };
  }
  return { newChatId, user, sessionsOf, signIn, mint, callbackWith, failedWith, popupOutcome };
}
