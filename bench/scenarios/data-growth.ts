// How cost grows with data (issue 22): the dashboard's read mix on PostgreSQL at 1M and at 10M
// reports and events, side by side in one run, each on a kept database loaded once and reused by
// later runs (bench/lib/kept-database.ts), behind two service instances, while a writer creates
// 20 reports a second throughout. Two views of each size:
//   - p99 at a fixed offered load: 200 requests/s in open loop (sent on the clock whether or not
//     earlier answers came back, latency counted from when each was due), the mix below;
//   - throughput at saturation: each kind alone at --connections, closed loop.
// Beside the mix, one `GET /` (liveness: no environment, no database) every FLOOR_EVERY ticks
// gives the floor of the p99 on this machine: the load generator, HTTP and scheduling alone.
// Every request is different (bench/lib/dashboard-mix.ts). The larger size's figures are set
// against the smaller's. Runs only when named: `--only data-growth --pg <url>`.
import { performance } from 'node:perf_hooks';
import { reportBody, startCreating } from '../lib/create-report.js';
import { auditPath, listPath, randomListQuery, randomPhrase, reportId } from '../lib/dashboard-mix.js';
import { keptDatabases, sizeLabel } from '../lib/kept-database.js';
import { OtherLoad, waitQuiet } from '../lib/machine.js';
import { every } from '../lib/open-loop.js';
import { describeWriter, type WriterResult } from '../lib/open-loop-writer.js';
import { withInstances } from '../lib/own-service.js';
import { API_KEY, freshDataDir } from '../lib/service.js';
import { describeSplit, measureSplit, type SplitLoadResult } from '../lib/split-load.js';
import { quantile } from '../lib/stats.js';
import type { Context, ResultLine, Scenario } from '../types.js';

// --- Sizes, instances, load ---
/** Reports and events (each) of the databases compared; `BENCH_GROWTH_ROWS` overrides (comma list, smallest first). */
const DEFAULT_SIZES = [1_000_000, 10_000_000];
const INSTANCES = 2;
const WRITES_PER_SECOND = 20;
/** The offered load a real staff sends; it is held for this many times --duration (60 s by default). */
const FIXED_RATE = 200;
const FIXED_DURATIONS = 6;
/** One liveness request beside every this many of the mix (10 a second at 200 req/s). */
const FLOOR_EVERY = 20;

// --- The fixed-load mix: shares of the 200 requests/s ---
const KINDS = ['list', 'detail', 'audit case id', 'audit phrase'] as const;
type Kind = (typeof KINDS)[number];
const SHARES: Record<Kind, number> = { list: 0.4, detail: 0.3, 'audit case id': 0.2, 'audit phrase': 0.1 };

// --- Goals (issue 22) ---
const P99_GOAL_MS: Partial<Record<Kind, number>> = { list: 20, detail: 10, 'audit case id': 10 };
/** At the larger size, every p99 and throughput within this factor of the smaller size's. */
const GROWTH_FACTOR_GOAL = 1.5;

const pathFor = (kind: Kind, rows: number): string => {
  switch (kind) {
    case 'list':
      return listPath(randomListQuery());
    case 'detail':
      return `/reports/${reportId(rows)}`;
    case 'audit case id':
      return auditPath(reportId(rows));
    case 'audit phrase':
      return auditPath(randomPhrase(rows));
  }
};

function pickKind(): Kind {
  let r = Math.random();
  for (const kind of KINDS) if ((r -= SHARES[kind]) < 0) return kind;
  return KINDS[0];
}

interface FixedLoad {
  /** Latencies (ms, from when each request was due) by kind, sorted. */
  latencies: Record<Kind, number[]>;
  /** Latencies (ms, from when each was due) of the liveness requests beside the mix, sorted. */
  floor: number[];
  sent: number;
  failed: number;
  sample?: string;
  /** How late the timer fired, p99 (ms): the load generator's own lag. */
  timerLateP99: number;
  otherCores: number;
}

interface SizeResult {
  rows: number;
  fixed: FixedLoad;
  saturation: Record<Kind, SplitLoadResult>;
  writer: WriterResult;
}

/** FIXED_RATE requests a second over the instances in turn, on the clock, for `seconds`. */
async function fixedLoad(urls: string[], rows: number, seconds: number): Promise<FixedLoad> {
  const latencies: Record<Kind, number[]> = { list: [], detail: [], 'audit case id': [], 'audit phrase': [] };
  const floor: number[] = [];
  const late: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let failed = 0;
  let sample: string | undefined;
  const load = new OtherLoad();
  const start = performance.now() + 100;
  const period = 1000 / FIXED_RATE;
  const send = (url: string, due: number, into: number[]) => {
    const p = fetch(url, { headers: { authorization: API_KEY } })
      .then(async (res) => {
        const text = await res.text();
        if (res.ok) into.push(performance.now() - due);
        else {
          failed++;
          sample ??= `${url} -> ${res.status} ${text.slice(0, 300)}`;
        }
      })
      .catch((err: Error) => {
        failed++;
        sample ??= `${url} -> ${err.message}`;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  await every(start, 0, period, start + seconds * 1000, late, (n) => {
    const due = start + n * period;
    const kind = pickKind();
    send(`${urls[n % urls.length]}${pathFor(kind, rows)}`, due, latencies[kind]);
    if (n % FLOOR_EVERY === 0) send(`${urls[(n / FLOOR_EVERY) % urls.length]}/`, due, floor);
  });
  await Promise.all([...inFlight]);
  for (const kind of KINDS) latencies[kind].sort((a, b) => a - b);
  floor.sort((a, b) => a - b);
  late.sort((a, b) => a - b);
  return { latencies, floor, sent: late.length, failed, timerLateP99: quantile(late, 0.99), otherCores: load.cores(), ...(sample === undefined ? {} : { sample }) };
}

async function measureSize(ctx: Context, serverUrl: string, rows: number): Promise<SizeResult> {
  const size = sizeLabel(rows);
  const dbs = await keptDatabases(serverUrl, rows, ctx.log);
  return withInstances(ctx, { dataDir: freshDataDir(), ...dbs }, async (service) => {
    const urls = service.instances.map((c) => c.url);
    const headers = { authorization: API_KEY };
    const writer = startCreating(urls, WRITES_PER_SECOND, (i) => reportBody(`GROW-${process.pid}-${Date.now().toString(36)}-${i}`, { notes: 'Reported during the data-growth load' }));
    let fixed: FixedLoad;
    let written: WriterResult;
    const saturation = {} as Record<Kind, SplitLoadResult>;
    try {
      // The warm-up a running service has had: every kind at saturation for --warmup seconds first.
      for (const kind of KINDS) {
        await measureSplit({ ...ctx.options, urls, path: () => pathFor(kind, rows), headers, duration: Math.max(1, ctx.options.warmup), warmup: 0, quietWait: 0, label: `warm-up ${kind}` });
      }
      // Then the fixed mix itself, discarded: the pages the measured minute reads are as warm as
      // on a service that has been answering for a while, whichever size was loaded last.
      await fixedLoad(urls, rows, ctx.options.duration);
      await waitQuiet(ctx.options.quietWait * 1000);
      const seconds = FIXED_DURATIONS * ctx.options.duration;
      fixed = await fixedLoad(urls, rows, seconds);
      const byKind = KINDS.map((k) => `${k} p50=${quantile(fixed.latencies[k], 0.5).toFixed(1)} p99=${quantile(fixed.latencies[k], 0.99).toFixed(1)} ms (${fixed.latencies[k].length})`).join('; ');
      ctx.log(`    ${size}, ${FIXED_RATE} req/s for ${seconds} s: ${byKind}; floor (GET /) p50=${quantile(fixed.floor, 0.5).toFixed(1)} p99=${quantile(fixed.floor, 0.99).toFixed(1)} ms; ${fixed.failed} failed, timer late p99 ${fixed.timerLateP99.toFixed(1)} ms${fixed.sample ? `; ${fixed.sample}` : ''}`);
      for (const kind of KINDS) {
        const m = await measureSplit({ ...ctx.options, urls, path: () => pathFor(kind, rows), headers, label: kind });
        saturation[kind] = m;
        ctx.log(`    ${size}, ${kind} at saturation: ${describeSplit(m)}`);
      }
    } finally {
      written = await writer.stop();
    }
    ctx.log(`    ${size}, writer: ${describeWriter(written)}`);
    return { rows, fixed, saturation, writer: written };
  }, { count: INSTANCES, name: `${size}: service` });
}

function sizes(): number[] {
  const raw = process.env.BENCH_GROWTH_ROWS;
  if (!raw) return DEFAULT_SIZES;
  const parsed = raw.split(',').map((s) => Number(s.trim()));
  if (parsed.some((n) => !Number.isInteger(n) || n < 1_000)) throw new Error(`BENCH_GROWTH_ROWS: a comma list of row counts (at least 1000), got "${raw}"`);
  return parsed;
}

export const dataGrowth: Scenario = {
  name: 'data-growth',
  description: `The dashboard read mix at 1M and at 10M reports and events (kept databases), ${INSTANCES} instances, a writer at ${WRITES_PER_SECOND} creates/s: p99 at ${FIXED_RATE} req/s open loop and throughput at saturation (PostgreSQL)`,
  needs: [],
  onlyWhenNamed: true,
  async run(ctx) {
    const serverUrl = ctx.options.pg;
    if (!serverUrl) throw new Error('data-growth runs on PostgreSQL: add --pg <url>');
    const results: SizeResult[] = [];
    for (const rows of sizes()) results.push(await measureSize(ctx, serverUrl, rows));

    const lines: ResultLine[] = [];
    for (const r of results) {
      const size = sizeLabel(r.rows);
      for (const kind of KINDS) {
        const p99 = quantile(r.fixed.latencies[kind], 0.99);
        const goal = P99_GOAL_MS[kind];
        lines.push(ctx.line(`${size} ${kind} p99 at ${FIXED_RATE} req/s`, p99, 'ms', goal === undefined ? undefined : { text: `< ${goal} ms`, ok: p99 < goal }));
      }
      lines.push(ctx.line(`${size} floor (GET /, no database) p99 beside the mix`, quantile(r.fixed.floor, 0.99), 'ms'));
      for (const kind of KINDS) {
        lines.push(ctx.line(`${size} ${kind} req/s at saturation`, r.saturation[kind].reqPerSec, 'req/s'));
        lines.push(ctx.line(`${size} ${kind} p99 at saturation`, r.saturation[kind].latencyMs.p99, 'ms'));
      }
      lines.push(ctx.line(`${size} writer creates/s`, r.writer.achieved, 'req/s', { text: `>= ${0.98 * WRITES_PER_SECOND}`, ok: r.writer.achieved >= 0.98 * WRITES_PER_SECOND }));
      const failures = r.fixed.failed + r.writer.failed + KINDS.reduce((a, k) => a + r.saturation[k].errors + r.saturation[k].non2xx, 0);
      lines.push(ctx.line(`${size} errors and non-2xx`, failures, 'requests', { text: '= 0', ok: failures === 0 }));
    }
    const small = results[0]!;
    const large = results[results.length - 1]!;
    if (large !== small) {
      const by = `${sizeLabel(large.rows)}/${sizeLabel(small.rows)}`;
      const within = (x: number) => ({ text: `<= ${GROWTH_FACTOR_GOAL}`, ok: x <= GROWTH_FACTOR_GOAL });
      for (const kind of KINDS) {
        const p99Fixed = quantile(large.fixed.latencies[kind], 0.99) / quantile(small.fixed.latencies[kind], 0.99);
        const p99Saturated = large.saturation[kind].latencyMs.p99 / small.saturation[kind].latencyMs.p99;
        const throughput = small.saturation[kind].reqPerSec / large.saturation[kind].reqPerSec;
        lines.push(ctx.line(`${kind} p99 at ${FIXED_RATE} req/s, ${by}`, p99Fixed, 'ratio', within(p99Fixed)));
        lines.push(ctx.line(`${kind} p99 at saturation, ${by}`, p99Saturated, 'ratio', within(p99Saturated)));
        lines.push(ctx.line(`${kind} throughput slowdown (req/s ${sizeLabel(small.rows)}/${sizeLabel(large.rows)})`, throughput, 'ratio', within(throughput)));
      }
    }
    return lines;
  },
};

