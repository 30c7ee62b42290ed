// Errors Fastify and Node raise themselves, before or outside a route, in the one envelope with a
// status that says what happened: bad percent-encoding, over-long parameters, headers over Node's
// limit, two Host headers; and the logging of 503s during a database outage.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DbError } from '../../src/platform/db/types.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from '../helpers/app.js';
import { capturedLog } from '../helpers/log-capture.js';
import { rawRequest } from '../helpers/raw-http.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let port: number;
const { logger, lines } = capturedLog();
let failDatabase = false;

beforeAll(async () => {
  t = await createTestApp({
    logger,
    extend(app) {
      // A route whose database is down while failDatabase is set (as the pg adapter reports it).
      app.get('/test/outage', { config: { auth: 'key' } }, async () => {
        if (failDatabase) throw new DbError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED', undefined, undefined);
        return { success: true };
      });
      app.get('/test/crash', { config: { auth: 'key' } }, async () => {
        throw new Error('kaboom');
      });
      // A handler that fails after its answer went out (GET: Fastify's own line; POST with a key:
      // the Idempotency-Key wrapper's).
      for (const method of ['GET', 'POST'] as const) {
        app.route({
          method,
          url: '/test/late-failure',
          config: { auth: 'key' },
          handler: async (_request, reply) => {
            const finished = new Promise((resolve) => reply.raw.once('finish', resolve));
            void reply.send({ success: true });
            await finished;
            throw new Error('failed after the answer');
          },
        });
      }
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(() => t.close());

const envelope = (error: string, code: string) => ({ success: false, error, code });

describe('router errors, answered before any route', () => {
  it.each([
    ['malformed percent-encoding in the path', '/reports/%E0%A4%A', 400, envelope('The URL has malformed percent-encoding', 'BAD_URL')],
    ['a lone surrogate as CESU-8 bytes', '/reports/a%ED%A0%80', 400, envelope('The URL has malformed percent-encoding', 'BAD_URL')],
    ['a path parameter over 100 characters', `/reports/${'x'.repeat(5000)}`, 414, envelope('A path parameter is longer than 100 characters', 'URI_TOO_LONG')],
  ])('%s', async (_what, url, status, body) => {
    const res = await t.app.inject({ url, headers: key });
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(res.json()).toEqual(body);
  });
});

describe('Node HTTP parser errors, written on the socket', () => {
  it('a URL over 16 KiB: 431 in the envelope, connection closed', async () => {
    const res = await rawRequest(port, `GET /reports?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual(envelope('The request line and headers are larger than 16 KiB', 'HEADERS_TOO_LARGE'));
  });

  it('bytes that are not HTTP: 400 in the envelope', async () => {
    const res = await rawRequest(port, 'HELLO THERE\r\n\r\n');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual(envelope('The request is not well-formed HTTP', 'BAD_REQUEST'));
  });
});

describe('two Host headers', () => {
  it('are a 400 in the envelope, whichever comes first', async () => {
    for (const hosts of ['Host: localhost\r\nHost: demo.localhost', 'Host: demo.localhost\r\nhost: localhost']) {
      const res = await rawRequest(port, `GET /agents HTTP/1.1\r\n${hosts}\r\nAuthorization: ${PRODUCTION_KEY}\r\nConnection: close\r\n\r\n`);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toEqual(envelope('The request has more than one Host header', 'DUPLICATE_HOST'));
    }
  });

  it('one Host header is served', async () => {
    const res = await rawRequest(port, `GET /agents HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${PRODUCTION_KEY}\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(200);
  });
});

describe('logging: a database outage is one line down and one line up, a 500 keeps its stack', () => {
  it('logs the change of state, not each 503, and never a stack for a 503', async () => {
    lines.length = 0;
    failDatabase = true;
    for (let i = 0; i < 20; i++) {
      const res = await t.app.inject({ url: '/test/outage', headers: key });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual(envelope('Database unavailable: connect ECONNREFUSED 127.0.0.1:5432', 'DATABASE_UNAVAILABLE'));
    }
    failDatabase = false;
    for (let i = 0; i < 5; i++) expect((await t.app.inject({ url: '/test/outage', headers: key })).statusCode).toBe(200);
    const messages = lines.map((line) => ({ level: line.level, msg: line.msg, stack: JSON.stringify(line).includes('"stack"') }));
    expect(messages).toEqual([
      { level: 40, msg: 'production database unreachable: answering 503 until it is back (Database unavailable: connect ECONNREFUSED 127.0.0.1:5432)', stack: false },
      { level: 40, msg: 'production database reachable again', stack: false },
    ]);
  });

  it('a 500 is logged at error with its stack', async () => {
    lines.length = 0;
    const res = await t.app.inject({ url: '/test/crash', headers: key });
    expect(res.statusCode).toBe(500);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, msg: 'kaboom', err: { stack: expect.stringContaining('kaboom') } });
  });

  it('a handler that fails after its answer was sent is logged at error, also above info (where request logging is off)', async () => {
    // Fastify's own line carries no request id above info (a request's logger is the root logger
    // there: app.ts); the key's wrapper's does.
    for (const [method, headers, msg, withId] of [
      ['GET', key, 'Promise errored, but reply.sent = true was set', false],
      ['POST', { ...key, 'idempotency-key': 'late-failure-1' }, 'the handler failed after its answer was sent', true],
    ] as const) {
      lines.length = 0;
      const res = await t.app.inject({ method, url: '/test/late-failure', headers });
      expect({ method, status: res.statusCode, body: res.json() }).toEqual({ method, status: 200, body: { success: true } });
      await new Promise((resolve) => setImmediate(resolve));
      expect(lines.map((line) => ({ level: line.level, msg: line.msg, err: line.err?.message, request_id: line.request_id }))).toContainEqual({
        level: 50,
        msg,
        err: 'failed after the answer',
        request_id: withId ? res.headers['x-request-id'] : undefined,
      });
    }
  });
});
