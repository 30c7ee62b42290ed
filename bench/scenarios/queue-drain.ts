// Queue throughput and exactly-once at full size (issue 5). 32 bot workers drain 20,000 report
// actions through `next` + `complete` over HTTP, against the same SQL in 32 raw loops through the
// same driver, in the same run. On PostgreSQL two instances share the database, and two more
// drains of 20,000 actions and 20,000 deliveries kill one instance with SIGKILL a third of the way
// in: its orphaned claims come back through the stale sweep. Every drain is checked exactly once.
// On PGlite (one process per folder) one instance drains, and the raw loop runs on a PGlite of its own.
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { abba, alternateDrains, drainedBy, drainRate, type Drained } from '../lib/alternate-drains.js';
import { drainQueue, exactlyOnceProblems, killPartWay, type FleetQueue, type FleetResult } from '../lib/bot-fleet.js';
import { fillStore, freshStore } from '../lib/own-service.js';
import { createBenchDatabases } from '../lib/pg.js';
import { settle, stop, type Child } from '../lib/proc.js';
import { seedActions, seedDeliveries } from '../lib/queue-seed.js';
import { rawDrainActions } from '../lib/raw-drain.js';
import { API_KEY, startService } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import type { Context, ResultLine, Scenario } from '../types.js';

const ITEMS = 20_000;
const WARMUP_ITEMS = 2_000;
const WORKERS = 32;
const STALE_SECONDS = 3;
/** One connection per worker on either side: two instances of 16, and the raw loop's 32. */
const POOL_PER_INSTANCE = 16;
const GOAL = { postgres: 0.6, pglite: 0.5 };
const CLAIM_P99_GOAL_MS = 20;

/** Raw and HTTP drains of ITEMS each, in alternating rounds: raw HTTP HTTP raw, twice. */
const ORDER = abba('raw' as const, 'http' as const, 2);
const PER_ROUND = ITEMS / (ORDER.length / 2);

function assertExactlyOnce(label: string, result: FleetResult, ids: number[]): void {
  const problems = exactlyOnceProblems(result, ids);
  if (problems.length) throw new Error(`${label}: ${problems.join('; ')}`);
}

/** The database agrees: every item success, one completion event each. */
async function assertStored(db: Db, queue: FleetQueue, ids: number[]): Promise<void> {
  const [table, id, event] = queue === 'actions' ? ['report_actions', 'action_id', 'queue.action_completed'] : ['discipline_deliveries', 'item_id', 'delivery.completed'];
  const { rows } = await db.query<{ done: number; events: number; distinct_events: number }>(
    `select (select count(*)::int from ${table} where ${id} = any($1::bigint[]) and status = 'success') as done,
            (select count(*)::int from events where type = $2::text and (data->>'${id}')::bigint = any($1::bigint[])) as events,
            (select count(distinct data->>'${id}')::int from events where type = $2::text and (data->>'${id}')::bigint = any($1::bigint[])) as distinct_events`,
    [ids, event],
  );
  const r = rows[0]!;
  if (r.done !== ids.length || r.events !== ids.length || r.distinct_events !== ids.length) {
    throw new Error(`${queue}: database has ${r.done} done, ${r.events} completion events (${r.distinct_events} distinct) for ${ids.length} items`);
  }
}

let batches = 0;

async function httpDrain(ctx: Context, db: Db, instances: Child[], count: number): Promise<FleetResult> {
  const ids = await seedActions(db, count, `HTTP${++batches}`);
  const result = await drainQueue({ instances: instances.map((c) => c.url), apiKey: API_KEY, queue: 'actions', workers: WORKERS, total: ids.length, deadlineMs: 600_000 });
  assertExactlyOnce('HTTP drain', result, ids);
  await assertStored(db, 'actions', ids);
  ctx.log(`    HTTP: ${ids.length} actions in ${(result.elapsedMs / 1000).toFixed(1)} s over ${instances.length} instance(s)`);
  return result;
}

async function rawDrain(ctx: Context, db: Db, count: number) {
  await seedActions(db, count, `RAW${++batches}`);
  const result = await rawDrainActions(db, WORKERS, count, STALE_SECONDS * 1000);
  ctx.log(`    raw: ${result.completed} actions in ${(result.elapsedMs / 1000).toFixed(1)} s`);
  return result;
}

function throughputLines(ctx: Context, { http, raw }: Record<'http' | 'raw', Drained>): ResultLine[] {
  ctx.log(`    raw ${raw.completed} in ${(raw.elapsedMs / 1000).toFixed(1)} s; HTTP ${http.completed} in ${(http.elapsedMs / 1000).toFixed(1)} s`);
  const httpRate = drainRate(http);
  const rawRate = drainRate(raw);
  const ratio = ctx.ratio(httpRate, rawRate);
  const p99 = percentile(http.claimLatencies, 0.99);
  const goal = GOAL[ctx.store];
  return [
    ctx.line(`drain ratio HTTP/raw (${WORKERS} workers)`, ratio, 'ratio', { text: `>= ${goal}`, ok: ratio >= goal }),
    ctx.line('HTTP actions completed/s', httpRate, 'items/s'),
    ctx.line('raw actions completed/s', rawRate, 'items/s'),
    ctx.line('claim (GET /actions/next) p99', p99, 'ms', ctx.store === 'postgres' ? { text: `< ${CLAIM_P99_GOAL_MS}`, ok: p99 < CLAIM_P99_GOAL_MS } : undefined),
    ctx.line('claim p50', percentile(http.claimLatencies, 0.5), 'ms'),
    // The same concurrency without HTTP: how much of the claim latency the machine itself sets.
    ctx.line('raw claim (sweep + claim statements) p99', percentile(raw.claimLatencies, 0.99), 'ms'),
  ];
}

async function onPostgres(ctx: Context, pgUrl: string): Promise<ResultLine[]> {
  const dbs = await createBenchDatabases(pgUrl);
  const db = openPostgres({ connectionString: dbs.productionUrl, max: 2 * POOL_PER_INSTANCE });
  const children: Child[] = [];
  const spawn = async () => {
    const { child } = await startService({ ...dbs, extraEnv: { QUEUE_STALE_TIMEOUT_SECONDS: String(STALE_SECONDS), DATABASE_POOL_SIZE: String(POOL_PER_INSTANCE) } });
    children.push(child);
    return child;
  };
  try {
    await migrate(db);
    const instances = [await spawn(), await spawn()];
    for (const child of instances) await settle(child);
    await httpDrain(ctx, db, instances, WARMUP_ITEMS);
    await rawDrain(ctx, db, WARMUP_ITEMS);
    const sides = await alternateDrains(ORDER, async (side) => (side === 'raw' ? rawDrain(ctx, db, PER_ROUND) : drainedBy(await httpDrain(ctx, db, instances, PER_ROUND))));
    const lines = throughputLines(ctx, sides);

    // The kill runs: the first instance survives, a fresh second one is killed each time.
    await stop(instances[1]!);
    for (const queue of ['actions', 'discipline'] as const) {
      const ids = queue === 'actions' ? await seedActions(db, ITEMS, 'KILL') : await seedDeliveries(db, ITEMS);
      const doomed = await spawn();
      const exited = new Promise((resolve) => doomed.proc.once('exit', resolve));
      const plan = killPartWay({ queue, url: doomed.url, apiKey: API_KEY, at: ids.length / 3, kill: () => doomed.proc.kill('SIGKILL') });
      const result = await drainQueue({ instances: [instances[0]!.url, doomed.url], apiKey: API_KEY, queue, workers: WORKERS, total: ids.length, deadlineMs: 600_000, onCompleted: plan.onCompleted });
      await exited;
      assertExactlyOnce(`${queue} drain with a kill`, result, ids);
      await assertStored(db, queue, ids);
      ctx.log(`    ${queue} with SIGKILL at ${Math.round(ids.length / 3)}: ${ids.length} completed exactly once in ${(result.elapsedMs / 1000).toFixed(1)} s; ` +
        `${plan.orphaned.length} orphaned claims swept back, ${result.connectionErrors} connection errors, ${result.alreadyCompleted} completions answered 409 after a lost answer`);
      lines.push(ctx.line(`${queue}: ${ITEMS} drained exactly once through a SIGKILL`, result.completed.size, 'items', { text: `= ${ITEMS}`, ok: result.completed.size === ITEMS }));
    }
    return lines;
  } finally {
    for (const child of children) await stop(child);
    await db.close();
  }
}

async function onPglite(ctx: Context): Promise<ResultLine[]> {
  // The service's folder is filled before it starts (one process per folder).
  const store = await freshStore(null);
  let ids: number[] = [];
  await fillStore(store, async (folder) => (ids = await seedActions(folder, WARMUP_ITEMS + ITEMS, 'HTTP')));
  const { child } = await startService({ ...store, extraEnv: { QUEUE_STALE_TIMEOUT_SECONDS: String(STALE_SECONDS) } });
  const own = await openPglite();
  try {
    await settle(child);
    await migrate(own);
    const fleets: FleetResult[] = [];
    const fleet = async (total: number) => {
      const result = await drainQueue({ instances: [child.url], apiKey: API_KEY, queue: 'actions', workers: WORKERS, total, deadlineMs: 600_000 });
      fleets.push(result);
      return result;
    };
    const doneSoFar = () => fleets.reduce((n, f) => n + f.completed.size, 0);
    await fleet(WARMUP_ITEMS);
    await rawDrain(ctx, own, WARMUP_ITEMS);
    // A worker finishes what it claimed, so a round may do a few more than asked: the last HTTP
    // round (the seventh) takes exactly what is left.
    const sides = await alternateDrains(ORDER, async (side, round) =>
      side === 'raw' ? rawDrain(ctx, own, PER_ROUND) : drainedBy(await fleet(round === 6 ? ids.length - doneSoFar() : PER_ROUND)),
    );
    const handed = new Map<number, number>();
    for (const f of fleets) for (const [id, n] of f.handouts) handed.set(id, (handed.get(id) ?? 0) + n);
    const completed = new Set(fleets.flatMap((f) => [...f.completed]));
    assertExactlyOnce('HTTP drains', { ...fleets[0]!, handouts: handed, completed }, ids);
    return throughputLines(ctx, sides);
  } finally {
    await stop(child);
    await own.close();
  }
}

export const queueDrain: Scenario = {
  name: 'queue-drain',
  description: `${WORKERS} bot workers drain ${ITEMS} actions (next + complete) vs the raw SQL loop; exactly once through a SIGKILL (PostgreSQL)`,
  needs: [],
  run: (ctx) => (ctx.options.pg ? onPostgres(ctx, ctx.options.pg) : onPglite(ctx)),
};
