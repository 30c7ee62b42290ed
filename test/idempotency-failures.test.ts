// An answer with an Idempotency-Key that the service could not finish (its key not looked up, its
// commit failed) is rendered after the handler, outside the error handler: it is logged as the
// error handler logs the same error, so that an outage seen only by keyed requests is not silent.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { switchableDatabase } from './helpers/failures.js';
import { storeName } from './helpers/stores.js';

const lines: Record<string, unknown>[] = [];
let t: TestApp;
let database: Awaited<ReturnType<typeof switchableDatabase>>;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  database = await switchableDatabase();
  t = await createTestApp({ openDb: { production: database.open }, logger: pino({ level: 'warn' }, sink) });
});
afterAll(async () => {
  database?.setDown(false);
  await t?.close();
});

const poll = (key?: string) =>
  t.app.inject({ url: '/actions/next', headers: { authorization: PRODUCTION_KEY, ...(key === undefined ? {} : { 'idempotency-key': key }) } });

describe(`a keyed answer the service could not finish, on ${storeName}`, () => {
  it('an idle poll whose key cannot be looked up: 503, logged once as the outage, and its end', async () => {
    // A poll that finds nothing: this instance remembers the queue as idle, and answers the next
    // polls from memory; a keyed one has its key looked up on its own, after its handler.
    expect((await poll()).statusCode).toBe(204);
    database.setDown(true);
    lines.length = 0;
    for (const key of ['idle-1', 'idle-2']) {
      const res = await poll(key);
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 503,
        body: { success: false, error: 'Database unavailable: connect ECONNREFUSED 127.0.0.1:5432', code: 'DATABASE_UNAVAILABLE' },
      });
    }
    database.setDown(false);
    expect((await poll('idle-3')).statusCode).toBe(204);
    expect(lines.map((line) => ({ level: line.level, msg: line.msg, url: line.url }))).toEqual([
      { level: 40, msg: 'production database unreachable: answering 503 until it is back (Database unavailable: connect ECONNREFUSED 127.0.0.1:5432)', url: '/actions/next' },
      { level: 40, msg: 'production database reachable again', url: undefined },
    ]);
  });
});
