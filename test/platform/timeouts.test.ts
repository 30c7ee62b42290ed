// A request that does not arrive in time (REQUEST_TIMEOUT_SECONDS, HEADERS_TIMEOUT_SECONDS) is
// answered 408 in the envelope and its socket closed: an absent body, a trickling body, headers
// that never end, a connection that sends nothing. Sub-second timeouts keep the test fast.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';

let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp({ env: { REQUEST_TIMEOUT_SECONDS: '0.6', HEADERS_TIMEOUT_SECONDS: '0.3' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(() => t.close());

const timedOut = { success: false, error: 'The request was not received in time', code: 'REQUEST_TIMEOUT' };
const post = (length: number) =>
  `POST /reports/create HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${PRODUCTION_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe('408 and the socket closed', () => {
  it('a POST whose body never arrives', async () => {
    const before = await t.db.production.query('select count(*)::int as n from reports');
    const res = await rawRequest(port, post(100));
    expect(res.status).toBe(408);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual(timedOut);
    expect(res.elapsedMs).toBeGreaterThanOrEqual(550);
    expect(res.elapsedMs).toBeLessThan(2000);
    expect(await t.db.production.query('select count(*)::int as n from reports')).toEqual(before);
  });

  it('a body trickling one byte at a time', async () => {
    const res = await rawRequest(port, post(100), { trickle: { pieces: Array.from({ length: 100 }, () => ' '), intervalMs: 100 } });
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual(timedOut);
    expect(res.elapsedMs).toBeLessThan(2000);
  });

  it('headers that never end', async () => {
    const res = await rawRequest(port, 'GET /agents HTTP/1.1\r\nHost: localhost\r\n', { trickle: { pieces: ['X-A: 1\r\n', 'X-B: 2\r\n', 'X-C: 3\r\n'], intervalMs: 100 } });
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual(timedOut);
    expect(res.elapsedMs).toBeLessThan(1500);
  });

  it('a connection that sends nothing', async () => {
    const res = await rawRequest(port, '');
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual(timedOut);
  });

  it('a request that arrives in time is served', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(res.status).toBe(200);
  });
});

describe('configuration', () => {
  it('defaults: 30 s for the request, 10 s for its headers', () => {
    const config = parseConfig({});
    expect([config.requestTimeoutMs, config.headersTimeoutMs]).toEqual([30_000, 10_000]);
  });

  it('a headers timeout longer than the request timeout is refused', () => {
    expect(() => parseConfig({ REQUEST_TIMEOUT_SECONDS: '5', HEADERS_TIMEOUT_SECONDS: '10' })).toThrow(
      'HEADERS_TIMEOUT_SECONDS, REQUEST_TIMEOUT_SECONDS: the headers timeout may not exceed the request timeout',
    );
    expect(() => parseConfig({ REQUEST_TIMEOUT_SECONDS: '0' })).toThrow(/REQUEST_TIMEOUT_SECONDS: expected a number of seconds above 0/);
  });
});
