// DEMO_LOCAL_SIGNIN on, in the demo environment: the page lists the fictional agents from the demo
// database, and a local sign-in session is an OAuth one in every respect (its row, its cookie,
// GET /auth/me, permissions, logout, expiry, fixation), set side by side with a real OAuth sign-in
// against the fake chat platform. What it refuses, and that it writes nothing then.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAgent } from '../src/agents/queries.js';
import { hashToken, SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { authNotificationsDelivered, createTestApp, DASHBOARD_ORIGIN, TRAINING_ORIGIN, type TestApp } from './helpers/app.js';
import { browserSignIn, startFakeChatPlatform, type FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { AGENT, DEMO_HOST, DIRECTOR, INACTIVE, postLocal, sessionCookieOf, sessionCount, sessionRows, SUSPENDED, tokenOf } from './helpers/local-signin.js';
import { ALLOWED, signInEnv } from './helpers/signin.js';

let fake: FakeChatPlatform;
let t: TestApp;
beforeAll(async () => {
  fake = await startFakeChatPlatform();
  t = await createTestApp({ env: { ...signInEnv(fake), DEMO_LOCAL_SIGNIN: 'true' } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** A real OAuth sign-in on the demo host: ALLOWED[i] maps to the i-th persona (i < 4). */
async function oauthCookie(allowedIndex: number): Promise<string> {
  fake.signInAs({ id: ALLOWED[allowedIndex]!, username: 'real-person', global_name: null });
  const { callback } = await browserSignIn(t.app, { host: DEMO_HOST });
  expect(callback.statusCode).toBe(302);
  return sessionCookieOf(callback);
}

async function localCookie(chatId: string): Promise<string> {
  const res = await postLocal(t.app, { chat_id: chatId });
  expect(res.statusCode).toBe(303);
  return sessionCookieOf(res);
}

const as = (cookie: string, method: 'GET' | 'POST', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: { host: DEMO_HOST, cookie }, ...(payload ? { payload } : {}) });
const me = (cookie: string) => as(cookie, 'GET', '/auth/me');

describe('GET /auth/local', () => {
  it('lists the fictional agents as the demo database has them, each with a sign-in form when it may sign in', async () => {
    await t.db.demo.query(`update agents set name = $1::text where chat_id = '836612470059934415'`, ['Kai <b>&</b> "Co"']);
    await insertAgent(t.db.demo, { chat_id: '555000000000000555', name: 'Not Seeded', status: 'active', clearance_level: 5 });
    const res = await t.app.inject({ url: '/auth/local', headers: { host: DEMO_HOST } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toMatch(
      new RegExp(`^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; form-action 'self' ${DASHBOARD_ORIGIN} ${TRAINING_ORIGIN}; base-uri 'none'; frame-ancestors 'none'$`),
    );
    const forms = [...res.body.matchAll(/name="chat_id" value="(\d+)"/g)].map((m) => m[1]);
    const { rows } = await t.db.demo.query<{ chat_id: string }>(
      `select chat_id from agents where status in ('active', 'onboarding') and chat_id <> '555000000000000555'`,
    );
    expect(forms.sort()).toEqual(rows.map((r) => r.chat_id).sort());
    expect(forms.slice(0, 4)).toEqual(['100000000000000001', '100000000000000002', '100000000000000003', '100000000000000004']);
    expect(res.body).toContain('Sign in as Morgan Hale</button> Director, clearance 5, active, admin');
    expect(res.body).toContain('Sign in as Kai &lt;b&gt;&amp;&lt;/b&gt; &quot;Co&quot;</button>');
    expect(res.body).toContain('Harper Quinn: Senior Agent, clearance 2, suspended <small>(745529016683307129)</small>; cannot sign in while suspended');
    expect(res.body).not.toContain('Not Seeded');
    expect(res.body).not.toContain('<script');
  });

  it('carries an allowed return_to into every form; refuses another with 400', async () => {
    const returnTo = `${TRAINING_ORIGIN}/sessions`;
    const res = await t.app.inject({ url: `/auth/local?return_to=${encodeURIComponent(returnTo)}`, headers: { host: DEMO_HOST } });
    expect(res.statusCode).toBe(200);
    expect(res.body.match(/name="return_to" value="https:\/\/training\.example\.test\/sessions"/g)).toHaveLength(res.body.match(/<form /g)!.length);
    const bad = await t.app.inject({ url: '/auth/local?return_to=https://evil.example.com/', headers: { host: DEMO_HOST } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ success: false, error: 'querystring.return_to must be a URL on an allowed dashboard or training origin', code: 'VALIDATION_ERROR' });
  });
});

describe('a local sign-in session is an OAuth session', () => {
  it('writes the same session row and sets the same cookie', async () => {
    fake.signInAs({ id: ALLOWED[2]!, username: 'real-person', global_name: null });
    const { callback } = await browserSignIn(t.app, { host: DEMO_HOST });
    const local = await postLocal(t.app, { chat_id: AGENT });
    expect(local.statusCode).toBe(303);
    expect(local.headers.location).toBe(`${DASHBOARD_ORIGIN}/`);
    expect(local.body).toBe('');
    const [oauthSet, localSet] = [callback, local].map((r) => r.cookies.find((c) => c.name === SESSION_COOKIE)!);
    const { value: oauthToken, ...oauthAttributes } = oauthSet!;
    const { value: localToken, ...localAttributes } = localSet!;
    expect(localAttributes).toEqual(oauthAttributes);
    expect(localAttributes).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/', maxAge: 43200 });
    expect(localToken).toMatch(/^demo\.[A-Za-z0-9_-]{43}$/);
    expect(oauthToken).toMatch(/^demo\.[A-Za-z0-9_-]{43}$/);

    const rows = await sessionRows(t.db.demo, AGENT);
    const byHash = (token: string) => rows.find((r) => r.token_hash === hashToken(token))!;
    expect(Object.keys(byHash(localToken))).toEqual(Object.keys(byHash(oauthToken)));
    const { rows: lifetimes } = await t.db.demo.query<{ token_hash: string; chat_id: string; seconds: number }>(
      `select token_hash, chat_id, extract(epoch from expires_at - created_at)::int as seconds from sessions where token_hash = any($1::text[])`,
      [[hashToken(localToken), hashToken(oauthToken)]],
    );
    expect(lifetimes.map(({ chat_id, seconds }) => ({ chat_id, seconds }))).toEqual([
      { chat_id: AGENT, seconds: 43200 },
      { chat_id: AGENT, seconds: 43200 },
    ]);
    // Bound to the demo: production does not know it.
    expect((await t.app.inject({ url: '/auth/me', headers: { host: 'localhost', cookie: `${SESSION_COOKIE}=${localToken}` } })).statusCode).toBe(401);
  });

  it('GET /auth/me answers the same for both', async () => {
    const [oauth, local] = [await oauthCookie(0), await localCookie(DIRECTOR)];
    const [a, b] = [await me(oauth), await me(local)];
    expect(b.statusCode).toBe(200);
    expect(b.json()).toEqual(a.json());
    expect(b.json()).toMatchObject({ agent: { chat_id: DIRECTOR, name: 'Morgan Hale', agent_rank: 'Director' }, admin: { allowlisted: true } });
  });

  it('is allowed and refused exactly what the OAuth session is, by clearance, rank and allowlist', async () => {
    const probes: [method: 'GET' | 'POST', url: string, payload: object | undefined, agentStatus: number, code?: string][] = [
      ['GET', '/punishments?limit=5', undefined, 200],
      ['POST', '/punishments', { user_id: '620018834472570880', reason: 'Probe' }, 403, 'INSUFFICIENT_CLEARANCE'],
      ['GET', '/reports/SVC-CASE-47877', undefined, 403, 'SUPERVISOR_ONLY'],
      ['GET', '/admin/audit?limit=1', undefined, 403, 'NOT_ADMIN'],
      ['GET', '/audit?limit=1', undefined, 403, 'INSUFFICIENT_CLEARANCE'],
    ];
    const agentCookies = [await oauthCookie(2), await localCookie(AGENT)] as const;
    const directorCookies = [await oauthCookie(0), await localCookie(DIRECTOR)] as const;
    for (const [method, url, payload, status, code] of probes) {
      const [viaOAuth, viaLocal] = await Promise.all([as(agentCookies[0], method, url, payload), as(agentCookies[1], method, url, payload)]);
      expect(viaLocal.statusCode, `${method} ${url}`).toBe(status);
      if (code) expect(viaLocal.json().code).toBe(code);
      expect(viaLocal.statusCode).toBe(viaOAuth.statusCode);
      expect(viaLocal.json()).toEqual(viaOAuth.json());
      if (method !== 'GET') continue;
      // The Director (clearance 5, supervisor rank, admin) may read every one of them, both ways.
      const [directorOAuth, directorLocal] = await Promise.all([as(directorCookies[0], 'GET', url), as(directorCookies[1], 'GET', url)]);
      expect(directorLocal.statusCode, `director ${url}`).toBe(200);
      expect(directorOAuth.statusCode).toBe(200);
    }
  });

  it('POST /auth/logout ends it: row deleted, cookie cleared, the next request 401', async () => {
    const oauth = await oauthCookie(2);
    const local = await localCookie(AGENT);
    const out = await as(local, 'POST', '/auth/logout');
    expect(out.statusCode).toBe(200);
    expect(out.json()).toEqual({ success: true });
    expect(String(out.headers['set-cookie'])).toMatch(new RegExp(`^${SESSION_COOKIE}=; Max-Age=0; Path=/; Expires=`));
    const { rows } = await t.db.demo.query('select 1 from sessions where token_hash = $1::text', [hashToken(tokenOf(local))]);
    expect(rows).toEqual([]);
    expect((await me(local)).statusCode).toBe(401);
    expect((await me(oauth)).statusCode).toBe(200); // the other session of the same agent lives on
  });

  it('expires as an OAuth session does', async () => {
    const [oauth, local] = [await oauthCookie(2), await localCookie(AGENT)];
    expect((await me(local)).statusCode).toBe(200); // now cached
    await t.db.demo.query(`update sessions set expires_at = now() - interval '1 second' where token_hash = any($1::text[])`, [
      [hashToken(tokenOf(local)), hashToken(tokenOf(oauth))],
    ]);
    await authNotificationsDelivered(t, 'demo');
    const [a, b] = [await me(oauth), await me(local)];
    expect(b.statusCode).toBe(401);
    expect(b.json()).toEqual({ success: false, error: 'Session expired or not valid here: sign in again', code: 'UNAUTHORIZED' });
    expect(b.json()).toEqual(a.json());
  });

  it('ends the session the browser carried before (fixation), whichever way it was made', async () => {
    const previous = await oauthCookie(0);
    const res = await postLocal(t.app, { chat_id: AGENT }, { headers: { cookie: previous } });
    expect(res.statusCode).toBe(303);
    const { rows } = await t.db.demo.query('select 1 from sessions where token_hash = $1::text', [hashToken(tokenOf(previous))]);
    expect(rows).toEqual([]);
    expect((await me(previous)).statusCode).toBe(401);
    expect((await me(sessionCookieOf(res))).json().agent.chat_id).toBe(AGENT);
  });
});

describe('POST /auth/local', () => {
  it('goes to an allowed return_to, and takes JSON as well as the form', async () => {
    const returnTo = `${TRAINING_ORIGIN}/sessions/7`;
    const res = await postLocal(t.app, { chat_id: AGENT, return_to: returnTo }, { json: true });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(returnTo);
    expect((await me(sessionCookieOf(res))).json().agent.chat_id).toBe(AGENT);
  });

  it('accepts posts from its own page and the dashboard and training origins', async () => {
    for (const origin of ['http://demo.localhost', DASHBOARD_ORIGIN, TRAINING_ORIGIN]) {
      expect((await postLocal(t.app, { chat_id: AGENT }, { headers: { origin } })).statusCode, origin).toBe(303);
    }
  });

  it.each([
    ['a foreign page (login CSRF)', { chat_id: DIRECTOR }, { origin: 'https://evil.example.com' }, 403,
      { error: 'Origin https://evil.example.com may not sign in here', code: 'ORIGIN_NOT_ALLOWED' }],
    ['an opaque origin', { chat_id: DIRECTOR }, { origin: 'null' }, 403, { error: 'Origin null may not sign in here', code: 'ORIGIN_NOT_ALLOWED' }],
    ['a suspended fictional agent', { chat_id: SUSPENDED }, {}, 403,
      { error: 'Demo agent Harper Quinn is suspended: only active or onboarding agents can sign in', code: 'AGENT_NOT_ACTIVE' }],
    ['an inactive fictional agent', { chat_id: INACTIVE }, {}, 403,
      { error: 'Demo agent Logan Reyes is inactive: only active or onboarding agents can sign in', code: 'AGENT_NOT_ACTIVE' }],
    ['an agent of the demo database that is not a fictional one', { chat_id: '555000000000000666' }, {}, 400,
      { error: 'body.chat_id 555000000000000666 is not a fictional demo agent: choose one listed at GET /auth/local', code: 'VALIDATION_ERROR' }],
    ['a malformed chat id', { chat_id: 'abc' }, {}, 400, { code: 'VALIDATION_ERROR' }],
    ['no chat id', {}, {}, 400, { code: 'VALIDATION_ERROR' }],
    ['a return_to elsewhere', { chat_id: AGENT, return_to: 'https://evil.example.com/' }, {}, 400,
      { error: 'body.return_to must be a URL on an allowed dashboard or training origin', code: 'VALIDATION_ERROR' }],
  ])('refuses %s and writes nothing', async (_label, body, headers, status, envelope) => {
    await insertAgent(t.db.demo, { chat_id: '555000000000000666', name: 'Real Looking', status: 'active', agent_rank: 'Director', clearance_level: 5 });
    const before = await sessionCount(t.db.demo);
    const res = await postLocal(t.app, body as Record<string, string>, { headers });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ success: false, ...envelope });
    expect(res.cookies.find((c) => c.name === SESSION_COOKIE)).toBeUndefined();
    expect(await sessionCount(t.db.demo)).toBe(before);
  });
});

describe('the OpenAPI document', () => {
  it('describes the local sign-in while it is on', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json', headers: { host: DEMO_HOST } })).json();
    expect(Object.keys(doc.paths['/auth/local'])).toEqual(['get', 'post']);
    expect(doc.paths['/auth/local'].post.summary).toBe('Demo only (DEMO_LOCAL_SIGNIN): sign in as a fictional demo agent');
  });
});
