// What a transaction-mode pooler costs (issue 30): the same service, on the same database, once
// straight to PostgreSQL and once through PgBouncer (`<ENV>_DATABASE_URL` the pooler's,
// `<ENV>_DATABASE_DIRECT_URL` the server's, DATABASE_PREPARED_STATEMENTS=false: PgBouncer 1.18
// cannot carry named statements), side by side, as ratios pooled/direct:
//   - list pages: GET /reports over the dashboard's mix (varied offsets, statuses, types, sorts;
//     bench/lib/dashboard-mix.ts) at --connections, closed loop, alternating rounds (compare());
//   - queue drain: 32 bot workers claiming and completing report actions (next + complete),
//     alternating drains direct, pooled, pooled, direct, twice.
// A writer creates reports through the bot's key on both services at WRITES_PER_SECOND throughout.
// The database holds ROWS generated reports and events and `jit = off` on the database, as docs/postgresql.md
// asks behind a pooler (the service sends it as a startup option only to PostgreSQL itself).
//
// Run by name, PostgreSQL only, with PgBouncer running (scripts/pgbouncer.sh):
// `npm run bench -- --only pooler-cost --pg postgres://root@127.0.0.1:5432/test`. BENCH_POOLER_URL
// names the pooler (default postgres://root@127.0.0.1:6432), BENCH_POOLER_ROWS the data (100,000).
import { abba, alternateDrains, drainedBy, drainRate } from '../lib/alternate-drains.js';
import { drainQueue, exactlyOnceProblems } from '../lib/bot-fleet.js';
import { NAMELESS, reportBody, startCreating } from '../lib/create-report.js';
import { randomListQuery, listPath } from '../lib/dashboard-mix.js';
import { wholeFromEnv } from '../lib/env.js';
import { generateReportsAndEvents } from '../lib/generate-data.js';
import { countAsOurs } from '../lib/machine.js';
import { describeWriter } from '../lib/open-loop-writer.js';
import { admin, createBenchDatabases, withDatabase } from '../lib/pg.js';
import { settle, stop, type Child } from '../lib/proc.js';
import { seedActions } from '../lib/queue-seed.js';
import { API_KEY, startService } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Context, ResultLine, Scenario } from '../types.js';

const POOLER_URL = process.env.BENCH_POOLER_URL || 'postgres://root@127.0.0.1:6432';
const POOL_SIZE = 16;
const WORKERS = 32;
/** Actions per drain; eight drains, four a side. */
const DRAIN_ITEMS = 4_000;
const WRITES_PER_SECOND = 10;

type SideName = 'direct' | 'pooled';

/** `url` with the pooler's host and port, the same database and user. */
function throughPooler(url: string): string {
  const target = new URL(url);
  const pooler = new URL(POOLER_URL);
  target.hostname = pooler.hostname;
  target.port = pooler.port;
  return target.toString();
}

async function run(ctx: Context): Promise<ResultLine[]> {
  const serverUrl = ctx.options.pg;
  if (!serverUrl) throw new Error('pooler-cost runs on PostgreSQL only: --pg <url>');
  const rows = wholeFromEnv('BENCH_POOLER_ROWS', 100_000, 1_000, 100_000_000);
  await admin(withDatabase(POOLER_URL, 'postgres'), (c) => c.query('select 1')).catch((err: Error) => {
    throw new Error(`no pooler answers at ${POOLER_URL} (${err.message}): start one with scripts/pgbouncer.sh`);
  });
  const dbs = await createBenchDatabases(serverUrl);
  countAsOurs('pgbouncer');
  const db = openPostgres({ connectionString: dbs.productionUrl, max: 4 });
  const children: Child[] = [];
  try {
    ctx.log(`    generating ${rows} reports and events`);
    await migrate(db);
    await generateReportsAndEvents(db, { reports: rows, events: rows });
    for (const url of [dbs.productionUrl, dbs.demoUrl]) {
      const name = new URL(url).pathname.slice(1);
      await admin(serverUrl, (c) => c.query(`alter database "${name}" set jit = off`));
    }
    const env = (side: SideName) => ({
      DATABASE_POOL_SIZE: String(POOL_SIZE),
      ...(side === 'pooled'
        ? {
            PRODUCTION_DATABASE_URL: throughPooler(dbs.productionUrl),
            PRODUCTION_DATABASE_DIRECT_URL: dbs.productionUrl,
            DEMO_DATABASE_URL: throughPooler(dbs.demoUrl),
            DEMO_DATABASE_DIRECT_URL: dbs.demoUrl,
            DATABASE_PREPARED_STATEMENTS: 'false',
          }
        : {}),
    });
    const services = {} as Record<SideName, Child>;
    for (const side of ['direct', 'pooled'] as const) {
      const { child } = await startService({ ...dbs, extraEnv: env(side), label: side });
      children.push(child);
      services[side] = child;
    }
    for (const child of children) await settle(child);

    const writer = startCreating([services.direct.url, services.pooled.url], WRITES_PER_SECOND, (i) =>
      reportBody(`POOLER-${i}`, { reason: 'Spam', notes: 'Written during pooler-cost', evidence: 'none', ...NAMELESS }),
    );
    try {
      const lists = await ctx.compare(
        { url: services.pooled.url, path: () => listPath(randomListQuery()), headers: { authorization: API_KEY }, label: 'GET /reports through PgBouncer' },
        { url: services.direct.url, path: () => listPath(randomListQuery()), headers: { authorization: API_KEY }, label: 'GET /reports direct' },
      );
      const drained = await drains(ctx, db, services);
      const written = await writer.stop();
      ctx.log(`    writer: ${describeWriter(written)}`);
      return [
        ctx.line('list pages pooled/direct', lists.ratio, 'ratio'),
        ctx.line('list pages direct', lists.b.reqPerSec, 'req/s'),
        ctx.line('list pages through PgBouncer', lists.a.reqPerSec, 'req/s'),
        ctx.line('list p99 direct', lists.b.latencyMs.p99, 'ms'),
        ctx.line('list p99 through PgBouncer', lists.a.latencyMs.p99, 'ms'),
        ctx.line(`queue drain pooled/direct (${WORKERS} workers)`, ctx.ratio(drainRate(drained.pooled), drainRate(drained.direct)), 'ratio'),
        ctx.line('queue drain direct', drainRate(drained.direct), 'items/s'),
        ctx.line('queue drain through PgBouncer', drainRate(drained.pooled), 'items/s'),
        ctx.line('claim p99 direct', percentile(drained.direct.claimLatencies, 0.99), 'ms'),
        ctx.line('claim p99 through PgBouncer', percentile(drained.pooled.claimLatencies, 0.99), 'ms'),
        ctx.line('writer creates answered 2xx', written.ok, 'requests', { text: `= ${written.sent}`, ok: written.ok === written.sent }),
      ];
    } finally {
      await writer.stop();
    }
  } finally {
    for (const child of children) await stop(child);
    await db.close();
  }
}

/** A warm-up drain of DRAIN_ITEMS a side, then drains in the order direct, pooled, pooled, direct (twice); each checked exactly once. */
async function drains(ctx: Context, db: ReturnType<typeof openPostgres>, services: Record<SideName, Child>) {
  const drain = async (side: SideName, round: number | 'warm-up') => {
    const ids = await seedActions(db, DRAIN_ITEMS, `DRAIN-${side}-${round}`);
    const result = await drainQueue({ instances: [services[side].url], apiKey: API_KEY, queue: 'actions', workers: WORKERS, total: ids.length, deadlineMs: 600_000 });
    const problems = exactlyOnceProblems(result, ids);
    if (problems.length) throw new Error(`${side} drain: ${problems.join('; ')}`);
    ctx.log(`    ${side} drain ${round}: ${ids.length} actions in ${(result.elapsedMs / 1000).toFixed(1)} s`);
    return drainedBy(result);
  };
  for (const side of ['direct', 'pooled'] as const) await drain(side, 'warm-up');
  return alternateDrains(abba<SideName>('direct', 'pooled', 2), drain);
}

export const poolerCost: Scenario = {
  name: 'pooler-cost',
  description: 'list pages and a queue drain through PgBouncer (transaction mode) and direct, side by side, with writes going on (PostgreSQL)',
  needs: [],
  onlyWhenNamed: true,
  run,
};
