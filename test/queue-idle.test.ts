// Idle queues (src/queue/idle.ts): after an empty pickup, polls are answered 204 from memory, and
// every way work can appear ends that at once or at its due time: a commit on this instance, a
// notification from a write elsewhere, an item going stale, a paced retry or an expiry falling due.
// Clock-driven rows are written with triggers off (session_replication_role = replica), so no
// notification announces them: only the due time computed at the empty pickup can.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '../src/platform/db/types.js';
import type { Environment } from '../src/platform/environments.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let env: Environment;
let statements = 0;
let transactions = 0;
/**
 * What a poll of a queue remembered as idle costs: nothing, or with an Idempotency-Key (every
 * request of the suite carries one under TEST_IDEMPOTENCY_KEYS) one lookup of the key, whose
 * retry must get the item an earlier attempt claimed even when the queue is idle since.
 */
const IDLE_POLL = process.env.TEST_IDEMPOTENCY_KEYS === '1' ? 1 : 0;

beforeAll(async () => {
  t = await createTestApp({ env: { QUEUE_STALE_TIMEOUT_SECONDS: '2' } });
  env = t.environments.get('production')!;
  // Count what the environment sends to its database, in a transaction too (a request with an
  // Idempotency-Key runs in one: TEST_IDEMPOTENCY_KEYS).
  const db = env.db as { query: Db['query']; transaction: Db['transaction'] };
  const query = db.query.bind(db);
  db.query = (text, values, options) => {
    statements++;
    return query(text, values, options);
  };
  const transaction = db.transaction.bind(db);
  db.transaction = (fn) =>
    transaction((tx) => {
      transactions++;
      const counted = Object.create(tx, {
        query: { value: (text: string, values?: readonly unknown[], options?: object) => (statements++, tx.query(text, values, options)) },
      }) as typeof tx;
      return fn(counted);
    });
  await t.db.production.query(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence) values ('IDLE-1', '1', '2', 'Idle', '', '')`,
  );
});
afterAll(() => t.close());
beforeEach(async () => {
  await t.db.production.query('delete from report_actions');
  await t.db.production.query('delete from discipline_deliveries');
  await t.db.production.query('delete from punishments');
});

const poll = (queue: 'actions' | 'discipline') => t.app.inject({ url: `/${queue}/next`, headers: key });

/** Writes without firing triggers: no notification tells any instance about these rows. */
async function silently(sql: string): Promise<void> {
  await t.db.production.transaction(async (tx) => {
    await tx.query('set local session_replication_role = replica');
    await tx.query(sql);
  });
}

/** Polls until the instance remembers the queue as idle (notifications of earlier writes may still clear it). */
async function idleRemembered(queue: 'actions' | 'discipline'): Promise<void> {
  await vi.waitFor(async () => {
    expect((await poll(queue)).statusCode).toBe(204);
    expect(env.idleQueues.get(queue)).toBe(true);
  });
}

/**
 * Waits until the instance forgets the queue was idle, which it does at the due time computed at the
 * empty pickup: within 800 ms here (each case's due time is 600 ms after its write).
 */
async function forgotten(queue: 'actions' | 'discipline'): Promise<void> {
  await vi.waitFor(() => expect(env.idleQueues.get(queue)).toBeUndefined(), { timeout: 800, interval: 10 });
}

async function statementsFor(fn: () => Promise<unknown>): Promise<number> {
  const before = statements;
  await fn();
  return statements - before;
}

describe('an idle queue', () => {
  it('answers further polls 204 without touching the database', async () => {
    await idleRemembered('actions');
    expect(await statementsFor(async () => {
      for (let i = 0; i < 5; i++) expect((await poll('actions')).statusCode).toBe(204);
    })).toBe(5 * IDLE_POLL);
  });

  it('answers a poll with an Idempotency-Key, as the README\'s bot sends it, with one lookup of the key and no transaction', async () => {
    await idleRemembered('actions');
    const keyed = () => t.app.inject({ url: '/actions/next', headers: { ...key, 'idempotency-key': randomUUID() } });
    // The first keyed request of a minute also sweeps the expired answers (one statement more).
    expect((await keyed()).statusCode).toBe(204);
    const opened = transactions;
    expect(await statementsFor(async () => {
      for (let i = 0; i < 5; i++) expect((await keyed()).statusCode).toBe(204);
    })).toBe(5);
    expect(transactions).toBe(opened);
    expect(await t.db.production.query('select 1 from idempotency_keys')).toMatchObject({ rowCount: 0 });
  });

  it('hands a keyed poll\'s retry the action its first attempt claimed, though the queue is idle since', async () => {
    // An action requested as the dashboard requests one.
    const acted = await t.app.inject({ method: 'POST', url: '/reports/IDLE-1/action', headers: key, payload: { action: 'contact_reporter', reason: 'Retry check' } });
    expect(acted.statusCode).toBe(200);
    const retried = { ...key, 'idempotency-key': randomUUID() };
    let first!: Awaited<ReturnType<typeof poll>>;
    await vi.waitFor(async () => {
      first = await t.app.inject({ url: '/actions/next', headers: retried });
      expect(first.statusCode).toBe(200);
    });
    await idleRemembered('actions');
    const retry = await t.app.inject({ url: '/actions/next', headers: retried });
    expect({ status: retry.statusCode, replayed: retry.headers['idempotent-replayed'], body: retry.json() }).toEqual({ status: 200, replayed: 'true', body: first.json() });
    expect(await t.db.production.query("select status, attempts from report_actions where report_id = 'IDLE-1'")).toMatchObject({ rows: [{ status: 'processing', attempts: 1 }] });
    await t.db.production.query(`delete from contact_threads where report_id = 'IDLE-1'`);
  });

  it('hands out at once what a request on this instance enqueues', async () => {
    await idleRemembered('actions');
    const acted = await t.app.inject({ method: 'POST', url: '/reports/IDLE-1/action', headers: key, payload: { action: 'contact_reporter', reason: 'Idle check' } });
    expect(acted.statusCode).toBe(200);
    const res = await poll('actions');
    expect(res.statusCode).toBe(200);
    expect(res.json().action).toMatchObject({ report_id: 'IDLE-1', kind: 'contact_reporter', status: 'processing', attempts: 1 });
    await t.db.production.query(`delete from contact_threads where report_id = 'IDLE-1'`);
  });

  it('hands out what another writer enqueues once its notification arrives', async () => {
    await idleRemembered('actions');
    await t.db.production.query(`insert into report_actions (report_id, kind, queue) values ('IDLE-1', 'validate', 'operator')`);
    await vi.waitFor(async () => expect((await poll('actions')).statusCode).toBe(200));
  });

  it('sweeps a claimed action when it goes stale, with no notification', async () => {
    await silently(`insert into report_actions (report_id, kind, queue, status, attempts, claimed_at)
                    values ('IDLE-1', 'validate', 'operator', 'processing', 1, now() - interval '1400 milliseconds')`);
    await idleRemembered('actions');
    // Remembered only until the action goes stale (2 s after its claim).
    expect(await statementsFor(() => poll('actions'))).toBe(IDLE_POLL);
    await forgotten('actions');
    const res = await poll('actions');
    expect(res.statusCode).toBe(200);
    expect(res.json().action).toMatchObject({ status: 'processing', attempts: 2 });
  });

  it('hands out a paced retry when it falls due, with no notification', async () => {
    await silently(`insert into punishments (punishment_id, user_id, reason) values ('ID1LE1', '700000000000000001', 'Idle')`);
    await silently(`insert into discipline_deliveries (kind, punishment_id, user_id, attempts, available_at)
                    values ('issue', 'ID1LE1', '700000000000000001', 1, now() + interval '600 milliseconds')`);
    await idleRemembered('discipline');
    expect(await statementsFor(() => poll('discipline'))).toBe(IDLE_POLL);
    await forgotten('discipline');
    const res = await poll('discipline');
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ kind: 'issue', punishment_id: 'ID1LE1', attempts: 2 });
  });

  it('expires a punishment when its time comes and hands out the delivery that lifts it, with no notification', async () => {
    await silently(`insert into punishments (punishment_id, user_id, reason, expires_at)
                    values ('ID1LE2', '700000000000000002', 'Idle', now() + interval '600 milliseconds')`);
    await idleRemembered('discipline');
    expect(await statementsFor(() => poll('discipline'))).toBe(IDLE_POLL);
    await forgotten('discipline');
    const res = await poll('discipline');
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ kind: 'expire', punishment_id: 'ID1LE2', punishment: { status: 'Expired' } });
  });

  it('is not remembered while notifications may be missed', async () => {
    env.idleQueues.setLive(false);
    try {
      expect((await poll('actions')).statusCode).toBe(204);
      expect(env.idleQueues.get('actions')).toBeUndefined();
      expect(await statementsFor(() => poll('actions'))).toBeGreaterThan(0);
    } finally {
      env.idleQueues.setLive(true);
    }
  });
});
