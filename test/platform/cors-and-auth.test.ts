// Credentialed CORS only for the configured origins; the API key as the whole Authorization
// header; what a route declares decides which credential it takes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { Environments } from '../../src/platform/environments.js';
import { createTestApp, DASHBOARD_ORIGIN, DEMO_KEY, PRODUCTION_KEY, silentLog, testConfig, TRAINING_ORIGIN, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    extend(app) {
      app.get('/test/session-only', { config: { auth: 'session', permission: 'manage_punishments' } }, async () => ({ success: true }));
      app.get('/test/either', { config: { auth: 'either', permission: 'delete_docket' } }, async (request) => ({
        success: true,
        principal: request.principal,
      }));
    },
  });
});
afterAll(() => t.close());

describe('CORS', () => {
  it.each([DASHBOARD_ORIGIN, TRAINING_ORIGIN])('gives credentialed headers to %s', async (origin) => {
    const res = await t.app.inject({ url: '/generate/case', headers: { origin, authorization: PRODUCTION_KEY } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(origin);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers.vary).toMatch(/Origin/);
  });

  it.each(['https://evil.example.com', 'https://dashboard.example.test.evil.com', 'null'])('gives no CORS headers to %s', async (origin) => {
    const res = await t.app.inject({ url: '/generate/case', headers: { origin, authorization: PRODUCTION_KEY } });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('answers a preflight from an allowed origin', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/util/timestamp',
      headers: { origin: DASHBOARD_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(DASHBOARD_ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toContain('PATCH');
    expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('content-type');
  });

  it('a preflight from another origin gets no allow headers', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/util/timestamp',
      headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' },
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('API key', () => {
  it.each([
    ['no header', undefined, 'Authentication required'],
    ['a wrong key', 'not-the-key', 'Invalid API key'],
    ['a Bearer prefix', `Bearer ${PRODUCTION_KEY}`, 'Invalid API key'],
    ['the key with trailing space', `${PRODUCTION_KEY} `, 'Invalid API key'],
    ['the other environment\'s key', DEMO_KEY, 'Invalid API key'],
  ])('%s: 401', async (_label, authorization, message) => {
    const res = await t.app.inject({ url: '/generate/agent', headers: authorization === undefined ? {} : { authorization } });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ success: false, error: message, code: 'UNAUTHORIZED' });
  });

  it('the key on a route that accepts it: 200, acting as the bot with every permission', async () => {
    const res = await t.app.inject({ url: '/test/either', headers: { authorization: PRODUCTION_KEY } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, principal: { kind: 'key' } });
  });

  it('a valid key on a session-only route: 403; an invalid one: 401', async () => {
    const valid = await t.app.inject({ url: '/test/session-only', headers: { authorization: PRODUCTION_KEY } });
    expect(valid.statusCode).toBe(403);
    expect(valid.json()).toMatchObject({ success: false, code: 'SESSION_REQUIRED' });
    const invalid = await t.app.inject({ url: '/test/session-only', headers: { authorization: 'nope' } });
    expect(invalid.statusCode).toBe(401);
  });

  it('with no key configured for the environment, key auth is refused', async () => {
    const noKey = await createTestApp({ env: { PRODUCTION_API_KEY: '' } });
    try {
      for (const authorization of ['', 'anything', PRODUCTION_KEY]) {
        const res = await noKey.app.inject({ url: '/generate/case', headers: { authorization } });
        expect(res.statusCode).toBe(401);
      }
    } finally {
      await noKey.close();
    }
  });
});

describe('route declarations', () => {
  it('a route that does not declare what credential it takes stops the app from building', async () => {
    const config = testConfig();
    const environments = await Environments.open(config, { log: silentLog, openDb: async () => t.db.production });
    await expect(
      buildApp({
        config,
        environments,
        ownsEnvironments: false,
        logger: silentLog,
        extraRoutes: (api) => void api.get('/test/undeclared', async () => ({ success: true })),
      }),
    ).rejects.toThrow('Route GET /test/undeclared does not declare config.auth');
  });
});
