// Exactly once across instances (issue 5): two service processes on different ports share one
// PostgreSQL database; 32 bot workers drain the report action queue, then the discipline queue,
// through `next` and `complete`. One instance is killed with SIGKILL half-way, after claiming
// items for a bot that died with it: those come back through the stale sweep. Every item is
// completed exactly once, none is handed out twice, and the database agrees. PostgreSQL only:
// an embedded folder belongs to one process. The full-size run is `npm run bench -- --only queue-drain`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainQueue, exactlyOnceProblems, killPartWay, type FleetQueue } from '../bench/lib/bot-fleet.js';
import { seedActions, seedDeliveries } from '../bench/lib/queue-seed.js';
import type { Db } from '../src/platform/db/types.js';
import { answering, freePort, startService, type Service } from './helpers/service-process.js';
import { createTestDatabase, databaseEnv, onPostgres, type TestDatabase } from './helpers/stores.js';

const KEY = 'instances-production-key-0000000';
const WORKERS = 32;
const ITEMS = 400;
const STALE_SECONDS = 2;

describe.runIf(onPostgres)('two instances on one PostgreSQL database', () => {
  const databases: TestDatabase[] = [];
  const services: Service[] = [];
  let db: Db;
  let env: Record<string, string>;

  async function instance(): Promise<Service> {
    const service = startService({ ...env, PORT: String(await freePort()) });
    services.push(service);
    await answering(service);
    return service;
  }

  beforeAll(async () => {
    const [production, demo] = [await createTestDatabase(), await createTestDatabase()];
    databases.push(production, demo);
    db = production.db;
    env = {
      ...databaseEnv('PRODUCTION', production),
      ...databaseEnv('DEMO', demo),
      PRODUCTION_API_KEY: KEY,
      DEMO_API_KEY: `${KEY}-demo`,
      QUEUE_STALE_TIMEOUT_SECONDS: String(STALE_SECONDS),
      LOG_LEVEL: 'warn',
      DATA_DIR: ':memory:',
    };
  }, 60_000);

  afterAll(async () => {
    for (const service of services) service.child.kill('SIGKILL');
    await Promise.all(services.map((s) => s.exited));
    for (const database of databases) await database.drop();
  });

  /**
   * Drains `queue` over a long-lived instance and one that is killed once a third is done. Just
   * before the kill, three items are claimed through the doomed instance for a bot that dies with
   * it: they are stuck in processing until the sweep hands them out again.
   */
  async function drainWithKill(queue: FleetQueue, ids: number[]) {
    const [survivor, doomed] = [await instance(), await instance()];
    const plan = killPartWay({ queue, url: doomed.url, apiKey: KEY, at: ids.length / 3, kill: () => doomed.child.kill('SIGKILL') });
    const result = await drainQueue({
      instances: [survivor.url, doomed.url],
      apiKey: KEY,
      queue,
      workers: WORKERS,
      total: ids.length,
      deadlineMs: 90_000,
      onCompleted: plan.onCompleted,
    });
    expect(await doomed.exited).toBe(null);
    survivor.child.kill('SIGTERM');
    await survivor.exited;
    return { result, orphaned: plan.orphaned };
  }

  it(`drains ${ITEMS} report actions exactly once while an instance is killed`, async () => {
    const ids = await seedActions(db, ITEMS);
    const { result, orphaned } = await drainWithKill('actions', ids);

    expect(exactlyOnceProblems(result, ids)).toEqual([]);
    expect(orphaned).toHaveLength(3);
    const { rows: statuses } = await db.query('select status, count(*)::int as n from report_actions group by status');
    expect(statuses).toEqual([{ status: 'success', n: ITEMS }]);
    const { rows: completions } = await db.query<{ action_id: number; n: number }>(
      `select (data->>'action_id')::bigint as action_id, count(*)::int as n from events
       where type = 'queue.action_completed' group by 1 having count(*) <> 1`,
    );
    expect(completions).toEqual([]);
    const { rows: events } = await db.query(`select count(*)::int as n from events where type = 'queue.action_completed'`);
    expect(events).toEqual([{ n: ITEMS }]);
    // The orphans came back through the sweep (actor system), were handed out once more, and done.
    const { rows: swept } = await db.query<{ action_id: number; attempts: number; requeues: number }>(
      `select a.action_id, a.attempts,
              (select count(*)::int from events e where e.type = 'queue.action_requeued' and e.actor_kind = 'system'
                 and (e.data->>'swept')::boolean and (e.data->>'action_id')::bigint = a.action_id) as requeues
       from report_actions a where a.action_id = any($1::bigint[]) order by a.action_id`,
      [orphaned],
    );
    expect(swept).toEqual([...orphaned].sort((a, b) => a - b).map((id) => ({ action_id: id, attempts: 2, requeues: 1 })));
    for (const id of orphaned) expect(result.handouts.get(id)).toBe(1);
  }, 120_000);

  it(`drains ${ITEMS} discipline deliveries exactly once while an instance is killed`, async () => {
    const ids = await seedDeliveries(db, ITEMS);
    const { result, orphaned } = await drainWithKill('discipline', ids);

    expect(exactlyOnceProblems(result, ids)).toEqual([]);
    expect(orphaned).toHaveLength(3);
    const { rows: statuses } = await db.query('select status, count(*)::int as n from discipline_deliveries group by status');
    expect(statuses).toEqual([{ status: 'success', n: ITEMS }]);
    const { rows: events } = await db.query(
      `select count(*)::int as n, count(distinct (data->>'item_id'))::int as items from events where type = 'delivery.completed'`,
    );
    expect(events).toEqual([{ n: ITEMS, items: ITEMS }]);
    const { rows: swept } = await db.query<{ item_id: number; attempts: number }>(
      `select d.item_id, d.attempts from discipline_deliveries d
       where d.item_id = any($1::bigint[]) and exists (
         select 1 from events e where e.type = 'delivery.requeued' and e.actor_kind = 'system' and (e.data->>'item_id')::bigint = d.item_id)
       order by d.item_id`,
      [orphaned],
    );
    expect(swept).toEqual([...orphaned].sort((a, b) => a - b).map((id) => ({ item_id: id, attempts: 2 })));
  }, 120_000);
});
