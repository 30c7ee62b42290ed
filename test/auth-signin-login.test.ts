// GET /auth/chat/login (spec: Authentication and session): the state it mints and binds to the
// browser, the return_to it accepts, and both routes' OpenAPI entry.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hashToken } from '../src/platform/auth/sessions.js';
import { DASHBOARD_ORIGIN, type TestApp } from './helpers/app.js';
import type { FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { openSignInApps } from './helpers/signin.js';

let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured, dashboard login URL set
let bare: TestApp; // no OAuth application
let close: () => Promise<void>;
beforeAll(async () => void ({ fake, t, close, bare } = await openSignInApps(() => ({ bare: {} }))));
afterAll(() => close?.());
beforeEach(() => fake.reset());

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

it('documents both routes under Authentication in /openapi.json', async () => {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json();
  for (const path of ['/auth/chat/login', '/auth/chat/callback']) expect(doc.paths[path].get.tags).toEqual(['Authentication']);
  expect(doc.paths['/auth/chat/callback'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['code', 'state', 'error']));
});
