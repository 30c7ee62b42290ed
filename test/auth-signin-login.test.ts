// GET /auth/chat/login (spec: Authentication and session): the state it mints and binds to the
// browser in a signed cookie without writing anything, the return_to it accepts, and both routes'
// OpenAPI entry.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sealState } from '../src/auth/oauth-state.js';
import { signingKey } from '../src/platform/auth/signing-keys.js';
import { DASHBOARD_ORIGIN, type TestApp } from './helpers/app.js';
import type { FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { openSignInApps } from './helpers/signin.js';
import { rowCounts } from './helpers/tables.js';

let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured, dashboard login URL set
let bare: TestApp; // no OAuth application
let close: () => Promise<void>;
beforeAll(async () => void ({ fake, t, close, bare } = await openSignInApps(() => ({ bare: {} }))));
afterAll(() => close?.());
beforeEach(() => fake.reset());

describe('GET /auth/chat/login', () => {
  it('keeps the attempt in a signed, environment-bound cookie, writes no row, and redirects to the platform', async () => {
    const returnTo = `${DASHBOARD_ORIGIN}/reports?open=1`;
    await t.app.inject({ url: '/auth/chat/login' }); // the environment's first sign-in creates its signing key, once
    const before = await rowCounts(t.db.production);
    const res = await t.app.inject({ url: `/auth/chat/login?return_to=${encodeURIComponent(returnTo)}` });
    expect(res.statusCode).toBe(302);
    expect(await rowCounts(t.db.production)).toEqual(before);
    const location = new URL(res.headers.location!);
    expect(`${location.origin}${location.pathname}`).toBe(`${fake.url}/oauth2/authorize`);
    const state = location.searchParams.get('state')!;
    expect(state).toMatch(/^production\.[A-Za-z0-9_-]{43}$/);
    expect([...location.searchParams]).toEqual([
      ['response_type', 'code'], ['client_id', fake.env().CHAT_OAUTH_CLIENT_ID], ['scope', 'identify'],
      ['redirect_uri', 'http://localhost/auth/chat/callback'], ['state', state], ['prompt', 'none'],
    ]);
    const cookie = res.cookies.find((c) => c.name === 'cms_oauth_state')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/auth/chat', maxAge: 600 });
    expect(cookie.secure).toBeUndefined();
    // The cookie carries the attempt in the clear (nothing secret in it) and the environment key's HMAC.
    const [body, signature] = cookie.value.split('.') as [string, string];
    const sealed = JSON.parse(Buffer.from(body, 'base64url').toString());
    expect(sealed).toEqual({ env: 'production', state, return_to: returnTo, popup: false, exp: expect.any(Number) });
    expect(sealed.exp - Date.now() / 1000).toBeGreaterThan(595);
    expect(sealed.exp - Date.now() / 1000).toBeLessThanOrEqual(600);
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie.value).toBe(sealState(await signingKey(t.db.production, 'oauth_state'), 'production', state, { returnTo, popup: false }, (sealed.exp - 600) * 1000));
  });

  it('10,000 logins leave every table of both environments as it was', async () => {
    await t.app.inject({ url: '/auth/chat/login' });
    await t.app.inject({ url: '/auth/chat/login', headers: { host: 'demo.localhost' } });
    const before = { production: await rowCounts(t.db.production), demo: await rowCounts(t.db.demo) };
    const long = encodeURIComponent(`${DASHBOARD_ORIGIN}/${'x'.repeat(2000)}`);
    // 50 at a time: in process, the loop's cost is the app's own work.
    for (let i = 0; i < 10_000; i += 50) {
      const batch = Array.from({ length: 50 }, (_, j) =>
        t.app.inject({ url: `/auth/chat/login?popup=1&return_to=${long}`, headers: { host: (i + j) % 2 ? 'demo.localhost' : 'localhost' } }));
      for (const res of await Promise.all(batch)) if (res.statusCode !== 302) expect(res.statusCode).toBe(302);
    }
    expect({ production: await rowCounts(t.db.production), demo: await rowCounts(t.db.demo) }).toEqual(before);
    // One key per environment, made by its first sign-in, is all sign-ins ever add.
    for (const db of [t.db.production, t.db.demo]) expect((await db.query('select purpose from signing_keys')).rows).toEqual([{ purpose: 'oauth_state' }]);
  }, 120_000);

  it.each(['https://evil.example.com/', 'https://dashboard.example.test.evil.com/', 'javascript:alert(1)', 'ftp://dashboard.example.test/', '/relative', ''])(
    'refuses return_to %j with 400 and writes nothing',
    async (returnTo) => {
      const before = await rowCounts(t.db.production);
      const res = await t.app.inject({ url: `/auth/chat/login?return_to=${encodeURIComponent(returnTo)}` });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ success: false, error: 'querystring.return_to must be a URL on an allowed dashboard or training origin', code: 'VALIDATION_ERROR' });
      expect(res.cookies).toEqual([]);
      expect(await rowCounts(t.db.production)).toEqual(before);
    },
  );

  it('refuses a return_to longer than 2,048 characters once URL-encoded (the cookie carrying it would pass 4 KB)', async () => {
    const before = await rowCounts(t.db.production);
    const res = await t.app.inject({ url: `/auth/chat/login?return_to=${encodeURIComponent(`${DASHBOARD_ORIGIN}/${'€'.repeat(300)}`)}` });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: 'querystring.return_to must be at most 2048 characters once URL-encoded', code: 'VALIDATION_ERROR' });
    expect(res.cookies).toEqual([]);
    expect(await rowCounts(t.db.production)).toEqual(before);
  });

  it('answers 503 on both routes when no OAuth application is configured', async () => {
    for (const url of ['/auth/chat/login', '/auth/chat/callback?code=x&state=y']) {
      const res = await bare.app.inject({ url });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ success: false, error: 'Chat sign-in is not configured', code: 'NOT_CONFIGURED' });
    }
  });
});

it('documents both routes under Authentication in /openapi.json', async () => {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json();
  for (const path of ['/auth/chat/login', '/auth/chat/callback']) expect(doc.paths[path].get.tags).toEqual(['Authentication']);
  expect(doc.paths['/auth/chat/callback'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['code', 'state', 'error']));
});
