// One envelope for every error, Fastify's own included; body limits; the SQLSTATE map.
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from '../helpers/app.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({
    // Routes that exist only in this test, to drive real database failures through the handler.
    extend(app) {
      app.post(
        '/test/items',
        { config: { auth: 'key' }, schema: { body: Type.Object({ id: Type.String(), n: Type.Optional(Type.Integer()) }, { additionalProperties: false }) } },
        async (request) => {
          const body = request.body as { id: string; n?: number };
          await request.environment.db.transaction(async (tx) => {
            await tx.exec('create table if not exists test_items (id text primary key, n int check (n >= 0))');
            await tx.query('insert into test_items (id, n) values ($1::text, $2::int)', [body.id, body.n ?? 0]);
          });
          return { success: true };
        },
      );
      app.post(
        '/test/form',
        { config: { auth: 'key', acceptsForm: true }, schema: { body: Type.Object({ a: Type.String() }, { additionalProperties: false }) } },
        async (request) => ({ success: true, received: request.body }),
      );
      app.get('/test/broken-sql', { config: { auth: 'key' } }, async (request) => {
        await request.environment.db.query('select * from no_such_table');
        return { success: true };
      });
      app.get('/test/throws', { config: { auth: 'key' } }, async () => {
        throw new Error('relay exploded');
      });
    },
  });
});
afterAll(() => t.close());

const envelope = (status: number, error: string | RegExp, code?: string) => ({ status, error, code });

async function expectError(res: { statusCode: number; json(): unknown; headers: Record<string, unknown> }, e: ReturnType<typeof envelope>) {
  expect(res.statusCode).toBe(e.status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json() as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(e.code ? ['code', 'error', 'success'] : ['error', 'success']);
  expect(body.success).toBe(false);
  if (typeof e.error === 'string') expect(body.error).toBe(e.error);
  else expect(body.error).toMatch(e.error);
  if (e.code) expect(body.code).toBe(e.code);
}

describe('Fastify errors in the envelope', () => {
  it('unknown route: 404', async () => {
    const res = await t.app.inject({ url: '/no/such/thing?x=1', headers: key });
    await expectError(res, envelope(404, 'Route GET /no/such/thing not found', 'NOT_FOUND'));
  });

  it('bad JSON: 400', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/util/timestamp', headers: { ...key, 'content-type': 'application/json' }, payload: '{"date":' });
    await expectError(res, envelope(400, 'Body is not valid JSON', 'VALIDATION_ERROR'));
  });

  it('unsupported media type: 415', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/util/timestamp', headers: { ...key, 'content-type': 'text/plain' }, payload: 'date' });
    await expectError(res, envelope(415, /^Unsupported Media Type: text\/plain/, 'UNSUPPORTED_MEDIA_TYPE'));
  });

  it('form bodies only where a route opts in: 415 elsewhere', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/util/timestamp',
      headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'date=Sat',
    });
    await expectError(res, envelope(415, 'Unsupported Media Type: application/x-www-form-urlencoded', 'UNSUPPORTED_MEDIA_TYPE'));
  });

  it('form bodies are parsed on a route that opts in', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/form',
      headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'a=hello%20world',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, received: { a: 'hello world' } });
  });

  it.each([
    [{}, 'body.date is required'],
    [{ date: 5 }, 'body.date must be string'],
    [{ date: 'x', extra: true }, 'body.extra is not an accepted field'],
    [{ date: 'x'.repeat(201) }, 'body.date must NOT have more than 200 characters'],
    [['date'], 'body must be object'],
  ])('validation failure %j: 400 naming the field', async (payload, message) => {
    const res = await t.app.inject({ method: 'POST', url: '/util/timestamp', headers: key, payload });
    await expectError(res, envelope(400, message, 'VALIDATION_ERROR'));
  });
});

describe('request bodies over 1 MiB: 413 on every route', () => {
  const big = JSON.stringify({ date: 'x'.repeat(2 * 1024 * 1024) });

  it.each([
    ['POST', '/util/timestamp'],
    ['POST', '/test/items'],
    ['GET', '/generate/case'],
    ['POST', '/no/such/route'],
    ['GET', '/'],
  ])('%s %s with a 2 MiB body', async (method, url) => {
    const res = await t.app.inject({ method: method as 'GET', url, headers: { ...key, 'content-type': 'application/json' }, payload: big });
    await expectError(res, envelope(413, 'Request body is larger than 1 MiB', 'PAYLOAD_TOO_LARGE'));
  });

  it('a chunked 2 MiB body without content-length is cut off at the limit', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const res = await fetch(`${address}/util/timestamp`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/json' },
      body: new Blob([big]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ success: false, error: 'Request body is larger than 1 MiB', code: 'PAYLOAD_TOO_LARGE' });
  });

  it('exactly 1 MiB is still accepted (then validated)', async () => {
    const padding = 1024 * 1024 - JSON.stringify({ date: '' }).length;
    const res = await t.app.inject({
      method: 'POST',
      url: '/util/timestamp',
      headers: { ...key, 'content-type': 'application/json' },
      payload: JSON.stringify({ date: 'x'.repeat(padding) }),
    });
    await expectError(res, envelope(400, 'body.date must NOT have more than 200 characters', 'VALIDATION_ERROR'));
  });
});

describe('database and internal failures', () => {
  it('a unique violation is a 409, and the failed transaction leaves nothing behind', async () => {
    const first = await t.app.inject({ method: 'POST', url: '/test/items', headers: key, payload: { id: 'a' } });
    expect(first.statusCode).toBe(200);
    const again = await t.app.inject({ method: 'POST', url: '/test/items', headers: key, payload: { id: 'a' } });
    await expectError(again, envelope(409, /^Already exists: duplicate key value violates unique constraint "test_items_pkey" \(Key \(id\)=\(a\) already exists\.\)$/, 'DUPLICATE'));
    const { rows } = await t.db.production.query('select id from test_items');
    expect(rows).toEqual([{ id: 'a' }]);
  });

  it('a check violation is a 400 naming the constraint', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/test/items', headers: key, payload: { id: 'b', n: -1 } });
    await expectError(res, envelope(400, /^Invalid value: new row for relation "test_items" violates check constraint "test_items_n_check"/, 'VALIDATION_ERROR'));
    const { rows } = await t.db.production.query(`select id from test_items where id = 'b'`);
    expect(rows).toEqual([]);
  });

  it('any other database failure is a 500 "Database error: <detail>" without a stack', async () => {
    const res = await t.app.inject({ url: '/test/broken-sql', headers: key });
    await expectError(res, envelope(500, 'Database error: relation "no_such_table" does not exist', 'DATABASE_ERROR'));
    expect(res.body).not.toMatch(/\bat \S+ \(/);
  });

  it('an unexpected error is a 500 carrying its message without a stack', async () => {
    const res = await t.app.inject({ url: '/test/throws', headers: key });
    await expectError(res, envelope(500, 'relay exploded', 'INTERNAL_ERROR'));
    expect(res.body).not.toContain('.ts:');
  });
});
