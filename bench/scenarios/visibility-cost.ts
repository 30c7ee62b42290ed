// What the visibility model costs (issues 28 and 38): the reads it filters (GET /reports pages,
// GET /reports/<id>, GET /audit searches, GET /actions/pending/operator) at 1M reports and events,
// this checkout's build against the build before the model (a git ref, built in this run:
// bench/lib/builds.ts), side by side.
//
// Each build runs as a service of its own on a kept database of its own, migrated and sealed by
// that build (`cms_bench_1m_vis_current`, `cms_bench_1m_vis_<ref>`: bench/lib/kept-database.ts),
// holding the same generated data: a tenth of the reports supervisor-flagged, events about every
// report (each carrying its report's flag where the schema still copies it, so both builds hide the
// same events), and a working queue (bench/lib/queue-seed.ts).
//
// The load is what the dashboard sends, every request drawn anew: a signed-in Agent below
// supervisor rank (the caller the model restricts), a Supervisor, and the bot's key (which sees
// everything, so the model must cost it nothing: issue 38) with the calls the bot makes. Each kind
// alone at saturation (--connections, closed loop), the two builds in alternating rounds of
// --duration seconds (B C, C B, …), while a writer creates reports through the bot's key on the
// side under load. The services are bound to one core and the load generator to the other (as in
// metrics-overhead); they take turns, so they never compete. Two processes of the same code differ
// for their whole life by a few percent, so the comparison is made on PAIRS fresh pairs of
// services (the one started first alternating) and pooled.
//
// Run by name, PostgreSQL only: `--only visibility-cost --pg <url>`. BENCH_VISIBILITY_BASELINE
// names the baseline ref (default a0e34f2, the commit before issue 28); BENCH_VISIBILITY_CALLERS
// keeps some callers only (`key`, `agent,supervisor`; default all three).
import { buildRef, thisBuild, type Build } from '../lib/builds.js';
import { reportBody, startCreating } from '../lib/create-report.js';
import { AGENTS, EVENT_TYPES, listPath, pick, random, randomListQuery, reportId } from '../lib/dashboard-mix.js';
import { wholeFromEnv } from '../lib/env.js';
import { keptDatabases, sizeLabel, type KeptDatabases } from '../lib/kept-database.js';
import { OtherLoad, waitQuiet } from '../lib/machine.js';
import { alternateRounds, runLoad, type LoadRun, type SideRun } from '../lib/measure.js';
import type { WriterResult } from '../lib/open-loop-writer.js';
import { cpuSeconds, httpGet, withPair, withServiceCore, type Child } from '../lib/proc.js';
import { seedQueueBacklog } from '../lib/queue-seed.js';
import { API_KEY, startService } from '../lib/service.js';
import { quantile } from '../lib/stats.js';
import { signInAs } from '../lib/sign-in.js';
import type { Context, ResultLine, Scenario } from '../types.js';

// --- What is compared, and how often ---
/** Issue 28: each kind keeps at least this share of the baseline's throughput. */
const GOAL = 0.9;
const BASELINE_REF = process.env.BENCH_VISIBILITY_BASELINE || 'a0e34f2';
const ROWS = wholeFromEnv('BENCH_VISIBILITY_ROWS', 1_000_000, 1_000, 100_000_000);
/** Fresh pairs of services, and alternating rounds of --duration seconds per side in each pair. */
const PAIRS = wholeFromEnv('BENCH_VISIBILITY_PAIRS', 2, 1, 20);
const ROUNDS = wholeFromEnv('BENCH_VISIBILITY_ROUNDS', 3, 1, 50);
/** A dashboard's mix comes with the bot filing reports (issue 38: 20 writes a second). */
const WRITES_PER_SECOND = 20;
/** The queue behind GET /actions/pending/…: open items (pending and processing) and finished history. */
const QUEUE = { open: 5_000, done: 20_000 };

// --- Who asks ---
/** Sessions, signed in on each side (bench/lib/sign-in.ts). */
const SESSIONS = {
  agent: { chatId: '300000000000000281', name: 'Bench Agent', rank: 'Agent', clearance: 4 },
  supervisor: { chatId: '300000000000000282', name: 'Bench Supervisor', rank: 'Supervisor', clearance: 4 },
} as const;
type Principal = keyof typeof SESSIONS | 'key';

// --- What they ask: every call draws a new request ---
const KINDS = ['reports page', 'report detail', 'audit search', 'audit case id', 'pending operator'] as const;
type Kind = (typeof KINDS)[number];

/**
 * What each caller is measured on: a dashboard's calls for the sessions; the bot's for its key (the
 * list, a report, a case's events). Report detail is the key's alone here: a tenth of the reports
 * answer an Agent 403.
 */
const CALLS: Record<Principal, readonly Kind[]> = {
  agent: ['reports page', 'audit search', 'pending operator'],
  supervisor: ['reports page', 'audit search', 'pending operator'],
  key: ['reports page', 'report detail', 'audit case id'],
};
const CALLERS = callersFromEnv();

function callersFromEnv(): Principal[] {
  const all = Object.keys(CALLS) as Principal[];
  const raw = process.env.BENCH_VISIBILITY_CALLERS;
  if (raw === undefined || raw === '') return all;
  const named = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = named.filter((n) => !(all as string[]).includes(n));
  if (unknown.length > 0 || named.length === 0) throw new Error(`BENCH_VISIBILITY_CALLERS: one or more of ${all.join(', ')}, got "${raw}"`);
  return all.filter((p) => named.includes(p));
}

/** The dashboard's list mix (bench/lib/dashboard-mix.ts: pages, statuses, type, sort) at varied page sizes. */
function reportsPath(): string {
  const q = randomListQuery();
  const limit = pick([10, 25, 50, 100, 200]);
  return listPath({ ...q, limit, offset: (q.offset / q.limit) * limit });
}

/** A random report's case id, a tenth of them in lower case, as typed. */
const caseId = () => (Math.random() < 0.1 ? reportId(ROWS).toLowerCase() : reportId(ROWS));
const auditPath = (search: string, offset = 0) => `/audit?search=${encodeURIComponent(search)}&limit=${pick([20, 50, 100])}&offset=${offset}`;

/**
 * Case ids, a note's phrase or a bare number (found in notes and case ids: a 4-digit one in many
 * events, a 7-digit one in a few), and broad words (an agent's name, an event type) paged deep.
 */
function auditSearchPath(): string {
  const r = Math.random();
  let search: string;
  let offset = 0;
  if (r < 0.35) search = caseId();
  else if (r < 0.55) search = `footage batch ${random(1, ROWS)}`;
  else if (r < 0.75) search = String(random(1_000, ROWS));
  else {
    search = Math.random() < 0.6 ? pick(AGENTS) : pick(EVENT_TYPES);
    offset = pick([0, 0, 50, 100, 250, 500]);
  }
  return auditPath(search, offset);
}

/** The operator queue (nine tenths of the open items), pages anywhere in it; a fifth pending only. */
function pendingPath(): string {
  const limit = pick([20, 50, 100, 200]);
  const offset = Math.random() < 0.4 ? 0 : random(0, 0.9 * QUEUE.open);
  return `/actions/pending/operator?limit=${limit}&offset=${offset}${Math.random() < 0.2 ? '&status=pending' : ''}`;
}

const PATHS: Record<Kind, () => string> = {
  'reports page': reportsPath,
  'report detail': () => `/reports/${reportId(ROWS)}`,
  'audit search': auditSearchPath,
  // The bot's audit call: a case's events.
  'audit case id': () => auditPath(caseId()),
  'pending operator': pendingPath,
};

// --- The two sides ---
interface Side {
  build: Build;
  dbs: KeptDatabases;
  child?: Child;
  /** Each caller's credentials on this side: a session's cookie, or the key. */
  credentials?: Partial<Record<Principal, Record<string, string>>>;
}
type SideName = 'baseline' | 'current';

/** The writer's reports, a tenth of them supervisor-flagged. */
const createBody = (prefix: string) => (i: number) => reportBody(`${prefix}-${i}`, { notes: 'Reported during the visibility-cost load', is_supervisor: i % 10 === 0 });

/** One load run on one side: the kind at saturation, the writer on the same side meanwhile. */
interface Slice extends LoadRun {
  otherCores: number;
  /** The service process's CPU seconds over the slice. */
  cpu: number;
  writer: WriterResult;
}

async function slice(ctx: Context, side: Side, principal: Principal, kind: Kind, seconds: number, quietWait: number): Promise<Slice> {
  const child = side.child!;
  await waitQuiet(quietWait * 1000);
  const load = new OtherLoad();
  const cpu = cpuSeconds(child.pid);
  const writer = startCreating([child.url], WRITES_PER_SECOND, createBody(`VIS-${process.pid}-${Date.now().toString(36)}`));
  let run: LoadRun;
  try {
    run = await runLoad({ url: child.url, headers: side.credentials![principal]!, path: PATHS[kind], connections: ctx.options.connections, duration: seconds });
  } catch (err) {
    await writer.stop();
    throw err;
  }
  const w = await writer.stop();
  return { ...run, otherCores: load.cores(), cpu: cpuSeconds(child.pid) - cpu, writer: w };
}

// --- One comparison: a principal's kind, both sides in alternating rounds ---
/** Every kept slice of one (principal, kind) over all pairs. */
interface Pooled {
  slices: Record<SideName, Slice[]>;
  /** current / baseline, round by round. */
  roundRatios: number[];
  /** current / baseline, pair by pair. */
  pairRatios: number[];
  redone: number;
}

const sum = <T>(xs: readonly T[], f: (x: T) => number) => xs.reduce((a, x) => a + f(x), 0);
const rate = (xs: readonly Slice[]) => sum(xs, (x) => x.completed) / sum(xs, (x) => x.seconds);
const latency = (xs: readonly Slice[], q: number) => quantile(Float64Array.from(xs.flatMap((x) => x.latencies)).sort(), q);
/** µs of the service process's CPU per answer (the writer's few creates included, on both sides alike). */
const cpuPerRequest = (xs: readonly Slice[]) => (sum(xs, (x) => x.cpu) / sum(xs, (x) => x.completed)) * 1e6;
const failures = (xs: readonly Slice[]) => sum(xs, (x) => x.errors + x.non2xx);

/** In alternating rounds (bench/lib/measure.ts); the side that goes first alternates from comparison to comparison too. */
async function compareKind(ctx: Context, sides: Record<SideName, Side>, principal: Principal, kind: Kind, first: SideName, into: Pooled): Promise<void> {
  const second: SideName = first === 'baseline' ? 'current' : 'baseline';
  const run = (name: SideName): SideRun<Slice> => (seconds, quietWait) => slice(ctx, sides[name], principal, kind, seconds, quietWait);
  const { options: o } = ctx;
  const { kept: [one, two], redone } = await alternateRounds([run(first), run(second)], { rounds: ROUNDS, seconds: o.duration, warmup: o.warmup, quietWait: o.quietWait });
  const kept = first === 'baseline' ? { baseline: one, current: two } : { baseline: two, current: one };
  into.redone += redone;
  into.roundRatios.push(...kept.current.map((c, i) => rate([c]) / rate([kept.baseline[i]!])));
  into.slices.baseline.push(...kept.baseline);
  into.slices.current.push(...kept.current);
  into.pairRatios.push(rate(kept.current) / rate(kept.baseline));
  const f = (name: SideName) => `${rate(kept[name]).toFixed(0)} req/s p50=${latency(kept[name], 0.5).toFixed(1)} p99=${latency(kept[name], 0.99).toFixed(1)} ms`;
  const both = [...kept.baseline, ...kept.current];
  const bad = failures(both);
  ctx.log(
    `    ${principal}, ${kind}: baseline ${f('baseline')}; current ${f('current')}; ratio ${(rate(kept.current) / rate(kept.baseline)).toFixed(2)}` +
      ` (rounds ${into.roundRatios.slice(-ROUNDS).map((r) => r.toFixed(2)).join(', ')}; other processes ${(sum(both, (x) => x.otherCores) / both.length).toFixed(2)} cores` +
      `${redone > 0 ? `, ${redone} round(s) redone` : ''})${bad > 0 ? `; ${bad} ERRORS or non-2xx` : ''}`,
  );
  if (bad > 0) {
    const path = PATHS[kind]();
    const res = await httpGet(`${sides.current.child!.url}${path}`, sides.current.credentials![principal]!, 10_000).catch((e: Error) => ({ status: 0, body: e.message }));
    ctx.log(`      sample (current): ${path} -> ${res.status} ${res.body.slice(0, 300)}`);
  }
}

// --- A pair of services ---
async function getJson(side: Side, principal: Principal, path: string): Promise<Record<string, unknown>> {
  const res = await httpGet(`${side.child!.url}${path}`, side.credentials![principal]!, 30_000);
  if (res.status !== 200) throw new Error(`${side.build.label}, ${principal}: GET ${path} answered ${res.status} ${res.body.slice(0, 300)}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

/** What each side answers each caller at first: each of its kinds answers 200, and the queue is there. */
async function describe(ctx: Context, side: Side): Promise<void> {
  for (const principal of CALLERS) {
    const list = await getJson(side, principal, '/reports?limit=50');
    const audit = await getJson(side, principal, `/audit?search=${encodeURIComponent(AGENTS[0]!)}&limit=50`);
    for (const kind of CALLS[principal]) await getJson(side, principal, PATHS[kind]());
    let queue = '';
    if (CALLS[principal].includes('pending operator')) {
      const pending = await getJson(side, principal, '/actions/pending/operator?limit=1');
      if (!(Number(pending.count) > 0)) throw new Error(`${side.build.label}: the operator queue is empty (${JSON.stringify(pending).slice(0, 200)})`);
      queue = `; GET /actions/pending/operator count ${String(pending.count)}`;
    }
    const counts = list.counts as { operator: number; supervisor: number };
    ctx.log(
      `    ${side.build.label}, ${principal}: GET /reports total ${Number(list.total).toLocaleString('en')} (operator ${counts.operator.toLocaleString('en')}, supervisor ${counts.supervisor.toLocaleString('en')}); ` +
        `GET /audit "${AGENTS[0]}" total ${String(audit.total)}${audit.total_capped ? ' (capped)' : ''}${queue}`,
    );
  }
}

async function runPair(ctx: Context, sides: Record<SideName, Side>, pair: number, core: string | undefined, pooled: Map<string, Pooled>): Promise<void> {
  const order: SideName[] = pair % 2 === 0 ? ['baseline', 'current'] : ['current', 'baseline'];
  const start = async (name: SideName) => {
    const { dbs, build } = sides[name];
    return (sides[name].child = (await startService({ productionUrl: dbs.productionUrl, demoUrl: dbs.demoUrl, chat: true, script: build.script, label: build.label })).child);
  };
  await withPair(order, core, start, async () => {
    for (const name of order) {
      const side = sides[name];
      const credentials: Partial<Record<Principal, Record<string, string>>> = { key: { authorization: API_KEY } };
      for (const principal of CALLERS) {
        if (principal !== 'key') credentials[principal] = { cookie: await signInAs(side.child!.url, side.dbs.productionUrl, SESSIONS[principal]) };
      }
      side.credentials = credentials;
      if (pair === 0) await describe(ctx, side);
    }
    ctx.log(`    pair ${pair + 1} of ${PAIRS}: ${order[0]} started first`);
    let j = pair;
    for (const principal of CALLERS) {
      for (const kind of CALLS[principal]) {
        await compareKind(ctx, sides, principal, kind, j++ % 2 === 0 ? 'baseline' : 'current', pooled.get(`${principal}|${kind}`)!);
      }
    }
  });
}

export const visibilityCost: Scenario = {
  name: 'visibility-cost',
  description: `GET /reports pages and reports, GET /audit searches, GET /actions/pending/operator at ${sizeLabel(ROWS)} rows: this build vs ${BASELINE_REF} (BENCH_VISIBILITY_BASELINE), Agent and Supervisor sessions and the bot's key (BENCH_VISIBILITY_CALLERS), alternating rounds (PostgreSQL)`,
  needs: [],
  onlyWhenNamed: true,
  async run(ctx) {
    const serverUrl = ctx.options.pg;
    if (!serverUrl) throw new Error('visibility-cost runs on PostgreSQL: add --pg <url>');
    const started = Date.now();
    const baselineBuild = await buildRef('baseline', BASELINE_REF, ctx.log);
    const extend = (db: Parameters<typeof seedQueueBacklog>[0], rows: number) => seedQueueBacklog(db, rows, QUEUE);
    const suffix = (s: string) => `vis_${s.toLowerCase().replace(/[^a-z0-9]+/g, '_').slice(0, 24)}`;
    const sides: Record<SideName, Side> = {
      baseline: { build: baselineBuild, dbs: await keptDatabases(serverUrl, ROWS, ctx.log, { suffix: suffix(BASELINE_REF), build: baselineBuild, extend }) },
      current: { build: thisBuild(), dbs: await keptDatabases(serverUrl, ROWS, ctx.log, { suffix: suffix('current'), extend }) },
    };
    ctx.log(`    builds and databases ready in ${((Date.now() - started) / 1000).toFixed(0)} s`);

    const pooled = new Map<string, Pooled>();
    for (const principal of CALLERS) {
      for (const kind of CALLS[principal]) pooled.set(`${principal}|${kind}`, { slices: { baseline: [], current: [] }, roundRatios: [], pairRatios: [], redone: 0 });
    }
    await withServiceCore(ctx.log, async (core) => {
      for (let pair = 0; pair < PAIRS; pair++) await runPair(ctx, sides, pair, core, pooled);
    });

    const lines: ResultLine[] = [];
    const all: Slice[] = [];
    for (const principal of CALLERS) {
      for (const kind of CALLS[principal]) {
        const p = pooled.get(`${principal}|${kind}`)!;
        const { baseline: b, current: c } = p.slices;
        all.push(...b, ...c);
        const ratio = rate(c) / rate(b);
        const name = `${principal} ${kind}`;
        ctx.log(
          `    ${name}: ratio ${ratio.toFixed(3)}; pairs ${p.pairRatios.map((r) => r.toFixed(2)).join(', ')}; rounds ${p.roundRatios.map((r) => r.toFixed(2)).join(', ')}` +
            `${p.redone ? ` (${p.redone} redone, machine busy)` : ''}; service CPU per request baseline ${cpuPerRequest(b).toFixed(0)} µs, current ${cpuPerRequest(c).toFixed(0)} µs`,
        );
        lines.push(
          ctx.line(`${name} req/s current/baseline`, ratio, 'ratio', { text: `>= ${GOAL}`, ok: ratio >= GOAL }),
          ctx.line(`${name} req/s baseline`, rate(b), 'req/s'),
          ctx.line(`${name} req/s current`, rate(c), 'req/s'),
          ctx.line(`${name} p50 baseline`, latency(b, 0.5), 'ms'),
          ctx.line(`${name} p50 current`, latency(c, 0.5), 'ms'),
          ctx.line(`${name} p99 baseline`, latency(b, 0.99), 'ms'),
          ctx.line(`${name} p99 current`, latency(c, 0.99), 'ms'),
          ctx.line(`${name} round ratio min`, Math.min(...p.roundRatios), 'ratio'),
          ctx.line(`${name} round ratio max`, Math.max(...p.roundRatios), 'ratio'),
        );
      }
    }
    const writers = all.map((s) => s.writer);
    const writeFailures = sum(writers, (w) => w.failed);
    const bad = failures(all) + writeFailures;
    lines.push(
      ctx.line('writer creates/s (on the side under load)', sum(writers, (w) => w.ok) / sum(writers, (w) => w.seconds), 'req/s'),
      ctx.line('CPU used by other processes meanwhile', sum(all, (s) => s.otherCores * s.seconds) / sum(all, (s) => s.seconds), 'cores'),
      ctx.line('errors and non-2xx (reads and writes)', bad, 'requests', { text: '= 0', ok: bad === 0 }),
    );
    if (writeFailures > 0) ctx.log(`    writer: ${writeFailures} failed; ${writers.find((w) => w.sample)?.sample ?? ''}`);
    ctx.log(`    the scenario took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return lines;
  },
};
