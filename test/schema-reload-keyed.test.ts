// POST /admin/schema/reload with an Idempotency-Key (issue 41). It drops the prepared statements
// (resetStatements) before its first statement so that its own transaction gets a fresh
// connection ("the reload must not fail on what it exists to clear", admin/schema.ts). Found by the
// second review of the keyed-request change: with a key, the key's transaction took its connection
// before the reset, and the reload's event insert failed on it with the very error the reload
// exists to clear. Its key is now looked up by its first statement (keyLookedUpLate).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/platform/db/postgres.js';
import { admin } from './helpers/admin.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
const report = () => ({ report_id: `IKS-RL-${process.pid}-${chatId()}`, reporter: chatId(), reported: chatId(), reason: 'Schema reload check', notes: 'n', evidence: 'e' });

describe.runIf(onPostgres)('a keyed schema reload after a schema changed out of band (PostgreSQL: prepared statements)', () => {
  let database: TestDatabase;
  let one: TestApp;
  let other: TestApp;
  const onOneConnection = async () => {
    const app = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: database.url!, max: 1 }) } });
    return { ...app, db: { ...app.db, production: database.db } };
  };
  beforeAll(async () => {
    database = await createTestDatabase();
    one = await onOneConnection();
    other = await onOneConnection();
  });
  afterAll(async () => {
    await Promise.all([one?.close(), other?.close()]);
    await database?.drop();
  });

  it('answers 200 with a fresh Idempotency-Key, as it does without one', async () => {
    const [directorOne, directorOther] = [await admin(one), await admin(other)];
    // record_event (a named statement returning the event's columns) prepared on each instance's one connection.
    for (const t of [one, other]) expect((await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: report() })).statusCode).toBe(201);
    // The change the operator made by hand, and reloads for: a column the event insert returns changes type.
    await database.db.exec('alter table events alter column client_id type varchar(64)');
    const payload = { reason: 'column type changed by hand' };
    const keyed = await one.app.inject({ method: 'POST', url: '/admin/schema/reload', headers: { ...directorOne.headers, 'idempotency-key': randomUUID() }, payload });
    const unkeyed = await other.app.inject({ method: 'POST', url: '/admin/schema/reload', headers: directorOther.headers, payload });
    expect({ keyed: { status: keyed.statusCode, body: keyed.json() }, unkeyed: unkeyed.statusCode }).toEqual({
      keyed: { status: 200, body: { success: true, correlation_id: expect.any(String) } },
      unkeyed: 200,
    });
  });
});
