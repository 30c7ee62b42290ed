// Response headers (issue 28): every answer X-Content-Type-Options: nosniff; answers to requests
// whose credential was accepted Cache-Control: no-store; /docs and the HTML pages a CSP with
// frame-ancestors 'none'; Strict-Transport-Security only over https. Every operation of
// /openapi.json is walked, with no credential and with each credential it declares, so a new
// route is covered without anyone adding it.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DASHBOARD_ORIGIN, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';

interface Operation {
  method: string;
  path: string;
  url: string;
  security: string[];
}

let t: TestApp;
let proxied: TestApp;
let director: Person;
let operations: Operation[];

beforeAll(async () => {
  [t, proxied] = await Promise.all([createTestApp({ env: { DEMO_LOCAL_SIGNIN: 'true' } }), createTestApp({ env: { TRUST_PROXY: 'true' } })]);
  director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
  const doc = (await t.app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { security?: Record<string, unknown>[]; parameters?: { name: string; in: string }[] }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      // Any value will do for a path parameter: the headers are the point, not the answer.
      url: (op.parameters ?? []).filter((p) => p.in === 'path').reduce((url, p) => url.replace(`{${p.name}}`, '1'), path),
      security: (op.security ?? []).flatMap((s) => Object.keys(s)),
    })),
  );
  // Signing out ends the session the walk uses: last.
  operations.sort((a, b) => Number(a.path === '/auth/logout') - Number(b.path === '/auth/logout'));
});
afterAll(() => Promise.all([t?.close(), proxied?.close()]));

const send = (op: Operation, headers: Record<string, string>) =>
  t.app.inject({
    method: op.method as 'GET',
    url: op.url,
    headers: op.method === 'GET' || op.method === 'DELETE' ? headers : { ...headers, 'content-type': 'application/json', origin: DASHBOARD_ORIGIN },
    ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { payload: '{}' }),
  });

const CREDENTIALS: Record<string, () => Record<string, string>> = {
  apiKey: () => ({ host: 'localhost', authorization: PRODUCTION_KEY }),
  session: () => director.headers,
};

describe('headers on every operation of /openapi.json', () => {
  it('covers the whole document, every credential kind among them', () => {
    expect(operations.length).toBeGreaterThan(80);
    expect(new Set(operations.flatMap((op) => op.security))).toEqual(new Set(['apiKey', 'session']));
  });

  it('nosniff on every answer; no-store on every answer to a request whose credential was accepted', async () => {
    const seen: string[] = [];
    for (const op of operations) {
      const bare = await send(op, { host: 'localhost' });
      expect(bare.headers['x-content-type-options'], `${op.method} ${op.url} without a credential`).toBe('nosniff');
      for (const kind of op.security) {
        const res: LightMyRequestResponse = await send(op, CREDENTIALS[kind]!());
        const label = `${op.method} ${op.url} with ${kind}: ${res.statusCode} ${res.body.slice(0, 120)}`;
        // The credential itself was accepted: whatever the route then says, it is not a 401.
        expect(res.statusCode, label).not.toBe(401);
        expect(res.headers['x-content-type-options'], label).toBe('nosniff');
        expect(res.headers['cache-control'], label).toBe('no-store');
        seen.push(`${op.method} ${op.path} ${kind}`);
      }
    }
    expect(seen.length).toBeGreaterThan(80);
  });

  it('no no-store for a credential that is refused, nor for routes that read none', async () => {
    const refused = await t.app.inject({ url: '/agents', headers: { host: 'localhost', authorization: 'not-the-key-0123456789' } });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['cache-control']).toBeUndefined();
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    const open = await t.app.inject({ url: '/openapi.json', headers: { host: 'localhost', authorization: PRODUCTION_KEY } });
    expect(open.headers['cache-control']).toBeUndefined();
  });

  it('answers outside the API context and the framework\'s own errors carry nosniff too', async () => {
    for (const url of ['/', '/ready', '/%zz', '/no/such/route', '/realtime/v1/websocket']) {
      const res = await t.app.inject({ url, headers: { host: 'localhost' } });
      expect(res.headers['x-content-type-options'], `${url}: ${res.statusCode}`).toBe('nosniff');
    }
    const unknownHost = await t.app.inject({ url: '/agents', headers: { host: 'elsewhere.example' } });
    expect(unknownHost.statusCode).toBe(421);
    expect(unknownHost.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('Content-Security-Policy', () => {
  it('JSON answers load and frame nothing; no answer may be framed', async () => {
    const res = await t.app.inject({ url: '/agents', headers: { host: 'localhost', authorization: PRODUCTION_KEY } });
    expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('/docs has a policy of its own with frame-ancestors \'none\' that lets every asset of the page load', async () => {
    const page = await t.app.inject({ url: '/docs/', headers: { host: 'localhost' } });
    expect(page.statusCode).toBe(200);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    // No inline script or style for the policy to block: every one is a file of the same origin.
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page.body).not.toMatch(/<style|\sstyle=/);
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => new URL(m[1]!, 'http://localhost/docs/').pathname);
    expect(assets).toEqual(expect.arrayContaining(['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui.css']));
    // The initializer reads the document from this origin (connect-src 'self').
    const initializer = await t.app.inject({ url: '/docs/static/swagger-initializer.js', headers: { host: 'localhost' } });
    const specUrl = /url: '([^']+)'/.exec(initializer.body)?.[1] ?? /"url":\s*"([^"]+)"/.exec(initializer.body)?.[1];
    for (const path of [...assets, new URL(specUrl ?? '/docs/json', 'http://localhost/docs/').pathname]) {
      const res = await t.app.inject({ url: path, headers: { host: 'localhost' } });
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['x-content-type-options'], path).toBe('nosniff');
      expect(res.headers['content-security-policy'], path).toBe(csp);
    }
  });

  it('the demo\'s local sign-in page keeps its own policy, frame-ancestors \'none\' in it', async () => {
    const res = await t.app.inject({ url: '/auth/local', headers: { host: 'demo.localhost' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[^']+'; .*frame-ancestors 'none'$/);
  });
});

describe('Strict-Transport-Security', () => {
  it('only on requests that came over https: behind a proxy (TRUST_PROXY) X-Forwarded-Proto says so', async () => {
    const over = (app: TestApp, proto?: string) => app.app.inject({ url: '/generate/case', headers: { host: 'localhost', authorization: PRODUCTION_KEY, ...(proto ? { 'x-forwarded-proto': proto } : {}) } });
    expect((await over(proxied, 'https')).headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect((await over(proxied, 'http')).headers['strict-transport-security']).toBeUndefined();
    expect((await over(proxied)).headers['strict-transport-security']).toBeUndefined();
    // Without TRUST_PROXY the header is anyone's to send: the connection (plain http) decides.
    expect((await over(t, 'https')).headers['strict-transport-security']).toBeUndefined();
  });
});
