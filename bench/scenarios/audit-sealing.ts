// The audit hash chain's cost (issue 21), side by side in one run with the build before it:
//   1. POST /reports/create, sealing service against the baseline build, alternating rounds;
//   2. the bot's queue drain (32 workers, `next` + `complete`), alternating rounds A B B A;
//   3. the sealing delay (commit -> sealed) under a 20 creates/s open-loop writer while the
//      dashboard's list mix reads;
//   4. with --pg only: verify-audit (the CLI, as operators run it) on a chain of 1,000,000 events.
// The baseline is another build of the service: BENCH_BASELINE_SERVICE names its dist/src/server.js
// (docs/performance.md, audit-sealing, shows how to build the commit before the chain).
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { sealAvailable } from '../../src/platform/audit-chain/seal.js';
import { migrate } from '../../src/platform/db/migrate.js';
import type { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { abba, alternateDrains, drainedBy, drainRate } from '../lib/alternate-drains.js';
import { drainQueue } from '../lib/bot-fleet.js';
import { createLoad, reportBody, startCreating } from '../lib/create-report.js';
import { listPath, randomListQuery } from '../lib/dashboard-mix.js';
import { freshStore, openStore, type Store } from '../lib/own-service.js';
import { createBenchDatabases } from '../lib/pg.js';
import { settle, stop, type Child } from '../lib/proc.js';
import { seedActions } from '../lib/queue-seed.js';
import { formatComparison } from '../lib/report.js';
import { API_KEY, DEMO_API_KEY, SERVICE_SCRIPT, startService } from '../lib/service.js';
import { signIn } from '../lib/sign-in.js';
import { quantile } from '../lib/stats.js';
import type { Context, ResultLine, Scenario } from '../types.js';

/** Issue goal: within 10 % of the baseline's throughput and p99. */
const GOAL = 0.9;
const DRAIN_ROUNDS = abba('a' as const, 'b' as const, 2);
const DRAIN_PER_ROUND = 2_000;
const WORKERS = 32;
const WRITER_PER_SECOND = 20;
const DELAY_SECONDS = 30;
/** BENCH_AUDIT_VERIFY_EVENTS=0 leaves part 4 out (loading a million rows takes minutes). */
const VERIFY_EVENTS = Number(process.env.BENCH_AUDIT_VERIFY_EVENTS ?? 1_000_000);

const createBody = (reportId: string) => reportBody(reportId, { notes: 'bench', evidence: 'clip' });

interface Side {
  label: string;
  script: string;
  store: Store;
  child?: Child;
}

/** The side's own build migrates and seeds its database (the baseline does not know migration 0021). */
async function prepare(side: Side, actions: number): Promise<void> {
  const src = dirname(side.script);
  const { migrate: migrateOwn } = (await import(pathToFileURL(join(src, 'platform/db/migrate.js')).href)) as { migrate: typeof migrate };
  const db: Db = side.store.productionUrl
    ? openPostgres({ connectionString: side.store.productionUrl })
    : await ((await import(pathToFileURL(join(src, 'platform/db/pglite.js')).href)) as { openPglite: typeof openPglite }).openPglite({ dataDir: join(side.store.dataDir, 'production') });
  try {
    await migrateOwn(db);
    await seedActions(db, actions, `DRAIN-${side.label}`);
  } finally {
    await db.close();
  }
}

export const auditSealing: Scenario = {
  name: 'audit-sealing',
  description: 'report creation and the queue drain with the audit chain vs the build before it; the sealing delay at 20 creates/s; verify-audit on 1M events (--pg)',
  needs: [],
  // Needs a second build (BENCH_BASELINE_SERVICE) and, with --pg, loads a million rows.
  onlyWhenNamed: true,
  async run(ctx) {
    const baseline = process.env.BENCH_BASELINE_SERVICE;
    if (!baseline) throw new Error('BENCH_BASELINE_SERVICE: the dist/src/server.js of the build before the audit chain (docs/performance.md, audit-sealing)');
    const sides: Record<'a' | 'b', Side> = {
      a: { label: 'sealing', script: SERVICE_SCRIPT, store: await freshStore(ctx.options.pg) },
      b: { label: 'baseline', script: baseline, store: await freshStore(ctx.options.pg) },
    };
    for (const side of Object.values(sides)) {
      // A round ends at DRAIN_PER_ROUND completions, with up to a claim per worker still finishing.
      await prepare(side, (DRAIN_PER_ROUND + 2 * WORKERS) * (DRAIN_ROUNDS.length / 2));
      side.child = (await startService({ ...side.store, chat: true, extraEnv: { DATABASE_POOL_SIZE: '16' }, script: side.script, label: side.label })).child;
    }
    const lines: ResultLine[] = [];
    try {
      for (const side of Object.values(sides)) await settle(side.child!);
      const { a, b } = { a: sides.a.child!, b: sides.b.child! };

      // 1. Creates.
      const create = (child: Child, label: string) => createLoad(child.url, createBody(`${label}-[<id>]`), `${label} POST /reports/create`);
      const c = await ctx.compare(create(a, 'sealing'), create(b, 'baseline'));
      ctx.log(formatComparison(c));
      const p99Ratio = c.b.latencyMs.p99 / c.a.latencyMs.p99;
      lines.push(
        ctx.line('create req/s ratio sealing/baseline', c.ratio, 'ratio', { text: `>= ${GOAL}`, ok: c.ratio >= GOAL }),
        ctx.line('create p99 ratio baseline/sealing', p99Ratio, 'ratio', { text: `>= ${GOAL}`, ok: p99Ratio >= GOAL }),
        ctx.line('sealing creates/s', c.a.reqPerSec, 'req/s'),
        ctx.line('baseline creates/s', c.b.reqPerSec, 'req/s'),
        ctx.line('sealing create p99', c.a.latencyMs.p99, 'ms'),
        ctx.line('baseline create p99', c.b.latencyMs.p99, 'ms'),
      );

      // 2. Queue drains, alternating.
      const drained = await alternateDrains(DRAIN_ROUNDS, async (side) =>
        drainedBy(await drainQueue({ instances: [sides[side].child!.url], apiKey: API_KEY, queue: 'actions', workers: WORKERS, total: DRAIN_PER_ROUND, deadlineMs: 300_000 })),
      );
      const rate = (s: 'a' | 'b') => drainRate(drained[s]);
      const p99 = (s: 'a' | 'b') => quantile(drained[s].claimLatencies.sort((x, y) => x - y), 0.99);
      const drainRatio = rate('a') / rate('b');
      const drainP99Ratio = p99('b') / p99('a');
      ctx.log(`    drain: sealing ${rate('a').toFixed(0)}/s claim p99 ${p99('a').toFixed(1)} ms; baseline ${rate('b').toFixed(0)}/s claim p99 ${p99('b').toFixed(1)} ms`);
      lines.push(
        ctx.line('drain completions/s ratio sealing/baseline', drainRatio, 'ratio', { text: `>= ${GOAL}`, ok: drainRatio >= GOAL }),
        ctx.line('drain claim p99 ratio baseline/sealing', drainP99Ratio, 'ratio', { text: `>= ${GOAL}`, ok: drainP99Ratio >= GOAL }),
        ctx.line('sealing drain completions/s', rate('a'), 'ops/s'),
        ctx.line('baseline drain completions/s', rate('b'), 'ops/s'),
        ctx.line('sealing drain claim p99', p99('a'), 'ms'),
        ctx.line('baseline drain claim p99', p99('b'), 'ms'),
      );

      // 3. The sealing delay at 20 creates/s while the dashboard's list mix reads.
      const cookie = await signIn(a.url, { chatId: '300000000000000011', clearance: 4 });
      const writer = startCreating([a.url], WRITER_PER_SECOND, (i) => createBody(`SEAL-${i}`));
      const reads = await ctx.measure({ url: `${a.url}/reports`, path: () => listPath(randomListQuery()), headers: { cookie }, connections: 8, duration: DELAY_SECONDS, label: 'dashboard list mix (meanwhile)' });
      const written = await writer.stop();
      ctx.log(`    writer: ${written.achieved.toFixed(1)}/s achieved, ${written.failed} failed; reads ${reads.reqPerSec.toFixed(0)}/s`);
      if (written.failed > 0) throw new Error(`writer: ${written.failed} failed (${written.sample})`);
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // the last rows' pass
      await stop(a);
      await stop(b);
      const delays = await sealingDelays(sides.a);
      lines.push(
        ctx.line('sealing delay p50 (commit -> sealed, 20 creates/s)', delays.p50, 'ms'),
        ctx.line('sealing delay p99 (commit -> sealed, 20 creates/s)', delays.p99, 'ms', { text: '< 5000', ok: delays.p99 < 5_000 }),
        ctx.line('sealing delay max', delays.max, 'ms'),
        ctx.line('writer achieved', written.achieved, 'req/s'),
      );
    } finally {
      for (const side of Object.values(sides)) if (side.child) await stop(side.child);
    }

    // 4. verify-audit on 1M events (PostgreSQL).
    if (ctx.options.pg && VERIFY_EVENTS > 0) lines.push(...(await verifyMillion(ctx)));
    return lines;
  },
};

/** created_at is the writing transaction's start: commit -> sealed is at most what this measures. */
async function sealingDelays(side: Side): Promise<{ p50: number; p99: number; max: number }> {
  const db = await openStore(side.store);
  try {
    const { rows } = await db.query<{ p50: number; p99: number; max: number; n: number }>(
      `select count(*)::int as n,
              percentile_cont(0.5) within group (order by d) as p50, percentile_cont(0.99) within group (order by d) as p99, max(d)::float8 as max
         from (select extract(epoch from c.sealed_at - e.created_at) * 1000 as d
                 from events e join audit_chain c on c.source = 'events' and c.row_id = e.id where e.report_id like 'SEAL-%') x`,
    );
    const unsealed = await db.query<{ n: number }>(`select count(*)::int as n from events e where e.report_id like 'SEAL-%' and not exists (select 1 from audit_chain c where c.source = 'events' and c.row_id = e.id)`);
    if (unsealed.rows[0]!.n > 0) throw new Error(`${unsealed.rows[0]!.n} of the writer's events were never sealed`);
    return rows[0]!;
  } finally {
    await db.close();
  }
}

async function verifyMillion(ctx: Context): Promise<ResultLine[]> {
  const dbs = await createBenchDatabases(ctx.options.pg!);
  const db = openPostgres({ connectionString: dbs.productionUrl, max: 4 });
  try {
    await migrate(db);
    let t = performance.now();
    // Events shaped like the service's: a report's status changes, an agent actor, before/after.
    await db.query(
      `insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, before, after, correlation_id, created_at)
       select 'report.status_changed', 'agent', (300000000000000000 + i % 500)::text, 'Agent ' || i % 500, 'BENCH-' || lpad((i % 200000)::text, 8, '0'),
              jsonb_build_object('status', 'Open'), jsonb_build_object('status', 'Pending', 'note', 'step ' || i), md5(i::text),
              timestamptz '2026-01-01' + make_interval(secs => i)
         from generate_series(1, $1::int) i`,
      [VERIFY_EVENTS],
    );
    ctx.log(`    ${VERIFY_EVENTS} events inserted in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    t = performance.now();
    await sealAvailable(db, 10_000);
    const sealSeconds = (performance.now() - t) / 1000;
    ctx.log(`    sealed in ${sealSeconds.toFixed(1)} s (${(VERIFY_EVENTS / sealSeconds).toFixed(0)} rows/s, one sealer)`);
    t = performance.now();
    const cli = join(dirname(SERVICE_SCRIPT), 'cli.js');
    const { stdout } = await promisify(execFile)(process.execPath, [cli, 'verify-audit', '--env', 'production'], {
      env: { PATH: process.env.PATH, PRODUCTION_DATABASE_URL: dbs.productionUrl, DEMO_DATABASE_URL: dbs.demoUrl, PRODUCTION_API_KEY: API_KEY, DEMO_API_KEY: DEMO_API_KEY },
    });
    const verifySeconds = (performance.now() - t) / 1000;
    ctx.log(`    ${stdout.trim()}`);
    if (!stdout.includes(`verifies: ${VERIFY_EVENTS} rows`)) throw new Error(`verify-audit: ${stdout}`);
    return [
      ctx.line(`verify-audit on ${VERIFY_EVENTS.toLocaleString('en')} events (CLI, wall time)`, verifySeconds, 's', { text: '< 60', ok: verifySeconds < 60 }),
      ctx.line('sealing a backlog of that size', VERIFY_EVENTS / sealSeconds, 'rows/s'),
    ];
  } finally {
    await db.close();
  }
}
