// Host resolution: every request but GET / belongs to exactly one environment, or to none.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { createTestDatabase, type TestDatabase } from '../helpers/stores.js';
import { createTestApp, DEMO_KEY, PRODUCTION_KEY, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { SERVICE_NAME: 'Harbor Watch' } });
});
afterAll(() => t.close());

async function eventCount(env: 'production' | 'demo') {
  const { rows } = await t.db[env].query<{ n: number }>('select count(*)::int8 as n from events');
  return rows[0]!.n;
}

describe('GET /', () => {
  it.each(['localhost', 'evil.example.com', ''])('answers the service name for host %j', async (host) => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: { host } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('Harbor Watch API Online');
  });
});

describe('environment resolution', () => {
  it('routes production hosts to production, case-insensitively and ignoring the port', async () => {
    for (const host of ['localhost', 'LOCALHOST:3000', '127.0.0.1:8080', 'LocalHost.']) {
      const res = await t.app.inject({ url: '/generate/case', headers: { host, authorization: PRODUCTION_KEY } });
      expect(res.statusCode, host).toBe(200);
    }
  });

  it('routes demo hosts to demo, where only the demo key is valid', async () => {
    const demo = await t.app.inject({ url: '/generate/case', headers: { host: 'Demo.Localhost:443', authorization: DEMO_KEY } });
    expect(demo.statusCode).toBe(200);
    const crossed = await t.app.inject({ url: '/generate/case', headers: { host: 'demo.localhost', authorization: PRODUCTION_KEY } });
    expect(crossed.statusCode).toBe(401);
    expect(crossed.json()).toEqual({ success: false, error: 'Invalid API key', code: 'UNAUTHORIZED' });
  });

  it.each(['evil.example.com', 'localhost.evil.com', 'demo.localhost.evil', '[::1]:3000', 'localhost@evil.com'])(
    'fails closed for host %j: no data from any environment',
    async (host) => {
      const before = { production: await eventCount('production'), demo: await eventCount('demo') };
      for (const [method, url] of [['GET', '/generate/case'], ['POST', '/util/timestamp'], ['GET', '/no/such/route']] as const) {
        const res = await t.app.inject({
          method,
          url,
          headers: { host, authorization: PRODUCTION_KEY, 'content-type': 'application/json' },
          ...(method === 'POST' ? { payload: { date: 'Sat Nov 21 2026 11:04:39 GMT+0000 (UTC)' } } : {}),
        });
        expect(res.statusCode).toBe(421);
        expect(res.json()).toEqual({
          success: false,
          error: 'This host is not served here: it resolves to no environment',
          code: 'UNKNOWN_HOST',
        });
      }
      expect({ production: await eventCount('production'), demo: await eventCount('demo') }).toEqual(before);
    },
  );

  it('fails closed when the Host header is missing (HTTP/1.0 over a real socket)', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = new URL(address);
    const raw = await new Promise<string>((resolve, reject) => {
      let data = '';
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(`GET /generate/case HTTP/1.0\r\nAuthorization: ${PRODUCTION_KEY}\r\n\r\n`);
      });
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.[01] 421 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({ success: false, code: 'UNKNOWN_HOST' });
    expect(raw).not.toContain('SVC-CASE-');
  });
});

describe('an environment whose database is unreachable', () => {
  let partial: TestApp;
  let recovered: TestDatabase | undefined;
  // Nothing listens on port 1: the production database is down at boot, and stays down (retried
  // every 100 ms in tests) until the test brings it up, whatever the machine's speed.
  let databaseUp = false;
  let failedAttempts = 0;
  beforeAll(async () => {
    partial = await createTestApp({
      openDb: {
        production: async () => {
          if (!databaseUp) {
            failedAttempts++;
            return openPostgres({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
          }
          recovered = await createTestDatabase();
          return recovered.db;
        },
      },
    });
  });
  afterAll(async () => {
    await partial.close();
    await recovered?.drop();
  });

  it('does not stop the boot; production answers 503 while demo keeps serving', async () => {
    const prod = await partial.app.inject({ url: '/generate/case', headers: { authorization: PRODUCTION_KEY } });
    expect(prod.statusCode).toBe(503);
    expect(prod.json()).toEqual({ success: false, error: 'Environment unavailable: production', code: 'ENVIRONMENT_UNAVAILABLE' });
    const demo = await partial.app.inject({ url: '/generate/case', headers: { host: 'demo.localhost', authorization: DEMO_KEY } });
    expect(demo.statusCode).toBe(200);
    // And it keeps trying.
    await vi.waitFor(() => expect(failedAttempts).toBeGreaterThanOrEqual(3), { timeout: 5_000, interval: 50 });
  });

  it('serves production once its database becomes reachable, migrated', async () => {
    databaseUp = true;
    await vi.waitFor(
      async () => {
        const res = await partial.app.inject({ url: '/generate/case', headers: { authorization: PRODUCTION_KEY } });
        expect(res.statusCode).toBe(200);
      },
      { timeout: 20_000, interval: 100 },
    );
    const { rows } = await recovered!.db.query('select version from schema_migrations');
    expect(rows.length).toBeGreaterThan(0);
  });
});
