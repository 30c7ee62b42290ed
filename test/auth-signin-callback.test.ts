// GET /auth/chat/callback signing agents in against a fake Discord over real HTTP: the session it
// starts, session fixation, the popup flow, and the demo environment's mapped identities.
// Cookies are carried by hand between app.inject calls, as a browser would.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { demoAgentFor } from '../src/auth/chat-client.js';
import { createSession, destroySession, findSessionAgent, hashToken, SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { DASHBOARD_ORIGIN, TRAINING_ORIGIN, type TestApp } from './helpers/app.js';
import { addAgent, TOKEN_PATH, USER_PATH, type FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { ALLOWED, openSignInApps, signInHelpers } from './helpers/signin.js';

let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured, dashboard login URL set
let close: () => Promise<void>;
beforeAll(async () => void ({ fake, t, close } = await openSignInApps()));
afterAll(() => close?.());
beforeEach(() => fake.reset());

const { newChatId, user, sessionsOf, signIn, failedWith, popupOutcome } = signInHelpers(() => ({ t }));

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
    // The page's own policy (its script's hash), not the API's default; no framing either way.
    expect(callback.headers['content-security-policy']).toMatch(/^default-src 'none'; script-src 'sha256-[^']+'; base-uri 'none'; frame-ancestors 'none'$/);
    // No Cross-Origin-Opener-Policy: it would cut the popup off from its opener.
    expect(callback.headers['cross-origin-opener-policy']).toBeUndefined();
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
