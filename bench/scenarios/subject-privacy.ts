// What a subject access request and an erasure cost at 1M reports and 1M events (issue 32: "found
// through indexes, not scans: at 1M reports and events an export of one person takes under a
// second"). PostgreSQL only, on a kept database of its own (`cms_bench_1m_privacy`:
// bench/lib/kept-database.ts) holding the generated reports and events and, planted among them
// before the seals, a population of people (bench/lib/subject-population.ts): each filed and was
// reported in a few reports, with notes, evidence, messages, a chat profile, a lifted punishment,
// deliveries, events and an admin audit row naming them.
//
// A Director on the admin allowlist, signed in through the real flow, while a writer creates 20
// reports a second throughout:
//   1. GET /admin/subjects/<chat_id>, EXPORTS requests, each for a different person drawn at random
//      (never one twice), CONCURRENCY at a time: latency and rows per export;
//   2. GET /reports/<id> the same way (random generated reports): the baseline the export is set
//      against, since both answer one person's or one case's rows;
//   3. POST /admin/subjects/<chat_id>/erase, ERASURES people (none of them exported here), one at a
//      time as an operator works (an erasure holds the sealer's lock to its commit: they queue anyway).
// PostgreSQL's counters show whether the exports scanned a table whole.
//
// An erasure is for good: each run erases people the earlier runs left, and a database whose
// population is used up must be dropped (`drop database cms_bench_1m_privacy`) to be loaded again.
// Run by name: `--only subject-privacy --pg <url>`.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { reportBody, startCreating } from '../lib/create-report.js';
import { reportId } from '../lib/dashboard-mix.js';
import { wholeFromEnv } from '../lib/env.js';
import { keptDatabases, sizeLabel } from '../lib/kept-database.js';
import { OtherLoad, waitQuiet } from '../lib/machine.js';
import { latencies } from '../lib/measure.js';
import { describeWriter, type WriterResult } from '../lib/open-loop-writer.js';
import { freshDataDir } from '../lib/service.js';
import { withInstances } from '../lib/own-service.js';
import { admin } from '../lib/pg.js';
import { readCounters, scanDelta } from '../lib/pg-counters.js';
import { signInAs } from '../lib/sign-in.js';
import { plantPopulation, unerasedSubjects } from '../lib/subject-population.js';
import type { ResultLine, Scenario } from '../types.js';

const ROWS = wholeFromEnv('BENCH_PRIVACY_ROWS', 1_000_000, 1_000, 100_000_000);
const SUBJECTS = wholeFromEnv('BENCH_PRIVACY_SUBJECTS', 2_000, 50, 1_000_000);
const EXPORTS = wholeFromEnv('BENCH_PRIVACY_EXPORTS', 300, 10, 100_000);
const ERASURES = wholeFromEnv('BENCH_PRIVACY_ERASURES', 30, 1, 10_000);
/** Requests in flight at once for the exports and the report details: a few Directors at work. */
const CONCURRENCY = wholeFromEnv('BENCH_PRIVACY_CONCURRENCY', 2, 1, 64);
const WRITES_PER_SECOND = 20;
/** Issue 32. */
const EXPORT_P95_GOAL_MS = 1_000;

const DIRECTOR = { chatId: '300000000000000321', name: 'Bench Director', rank: 'Director', clearance: 5 } as const;

/** One request of a run: where, and (for a POST) the body. */
interface Call {
  path: string;
  body?: unknown;
}

interface Timed {
  /** Sorted, ms. */
  sorted: Float64Array;
  /** Per answered call, what `count` read from its body (rows exported or erased). */
  counts: number[];
  failed: number;
  sample?: string;
  seconds: number;
  otherCores: number;
}

/** Each call once, `concurrency` at a time, in order; `count` reads a number out of each 200 answer. */
async function timedCalls(url: string, cookie: string, calls: Call[], concurrency: number, count: (body: Record<string, unknown>) => number): Promise<Timed> {
  const load = new OtherLoad();
  const ms: number[] = [];
  const counts: number[] = [];
  let failed = 0;
  let sample: string | undefined;
  const queue = [...calls];
  const started = performance.now();
  const worker = async () => {
    for (let call = queue.shift(); call; call = queue.shift()) {
      const post = call.body !== undefined;
      const t0 = performance.now();
      const res = await fetch(`${url}${call.path}`, {
        method: post ? 'POST' : 'GET',
        headers: post ? { cookie, 'content-type': 'application/json' } : { cookie },
        ...(post ? { body: JSON.stringify(call.body) } : {}),
      }).catch((err: Error) => err);
      const text = res instanceof Error ? res.message : await res.text();
      if (!(res instanceof Error) && res.status === 200) {
        ms.push(performance.now() - t0);
        counts.push(count(JSON.parse(text) as Record<string, unknown>));
      } else {
        failed++;
        sample ??= `${call.path} -> ${res instanceof Error ? 'error' : res.status} ${text.slice(0, 300)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { sorted: Float64Array.from(ms).sort(), counts, failed, ...(sample === undefined ? {} : { sample }), seconds: (performance.now() - started) / 1000, otherCores: load.cores() };
}

const describe = (t: Timed) => {
  const l = latencies(t.sorted);
  return `${t.sorted.length} answered in ${t.seconds.toFixed(1)} s, p50=${l.p50.toFixed(1)} p95=${l.p95.toFixed(1)} max=${l.max.toFixed(0)} ms, ` +
    `${t.failed} failed, other processes ${t.otherCores.toFixed(2)} cores${t.sample ? `; first failure: ${t.sample}` : ''}`;
};

/** Fisher-Yates: the people in a random order, each once. */
function shuffled<T>(xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const sumOf = (o: unknown) => Object.values((o ?? {}) as Record<string, number>).reduce((a, n) => a + n, 0);

export const subjectPrivacy: Scenario = {
  name: 'subject-privacy',
  description: `GET /admin/subjects/<chat_id> (each a different person) and POST /admin/subjects/<chat_id>/erase at ${sizeLabel(ROWS)} reports and events, against GET /reports/<id>, a writer at ${WRITES_PER_SECOND}/s (PostgreSQL)`,
  needs: [],
  onlyWhenNamed: true,
  async run(ctx) {
    const serverUrl = ctx.options.pg;
    if (!serverUrl) throw new Error('subject-privacy runs on PostgreSQL: add --pg <url>');
    const dbs = await keptDatabases(serverUrl, ROWS, ctx.log, { suffix: 'privacy', extend: (db) => plantPopulation(db, SUBJECTS) });
    const db = openPostgres({ connectionString: dbs.productionUrl, max: 1 });
    const people = shuffled(await unerasedSubjects(db).finally(() => db.close()));
    if (people.length < EXPORTS + ERASURES) {
      throw new Error(`${people.length} planted people are left unerased, ${EXPORTS + ERASURES} needed: drop database ${new URL(dbs.productionUrl).pathname.slice(1)} (and its _demo) to load it again`);
    }
    ctx.log(`    ${people.length.toLocaleString('en')} planted people not erased yet; exporting ${EXPORTS}, erasing ${ERASURES}, ${CONCURRENCY} at a time`);
    return withInstances(ctx, { dataDir: freshDataDir(), ...dbs }, async (service) => {
      const url = service.url;
      const cookie = await signInAs(url, dbs.productionUrl, DIRECTOR);
      // On the admin allowlist (checked on each request): the agent row exists from the sign-in on.
      await admin(dbs.productionUrl, (c) => c.query(`insert into admin_allowlist (chat_id, active) values ($1::text, true) on conflict (chat_id) do update set active = true`, [DIRECTOR.chatId]));

      const exported = people.slice(0, EXPORTS);
      const erased = people.slice(EXPORTS, EXPORTS + ERASURES);
      const exportCalls = exported.map((id) => ({ path: `/admin/subjects/${id}` }));
      const detailCalls = exported.map(() => ({ path: `/reports/${reportId(ROWS)}` }));
      const eraseCalls = erased.map((id) => ({ path: `/admin/subjects/${id}/erase`, body: { reason: 'Deletion requested by the person (bench)', reference: `BENCH-${randomUUID().slice(0, 8)}` } }));

      const writer = startCreating([url], WRITES_PER_SECOND, (i) => reportBody(`PRIVLOAD-${process.pid}-${Date.now().toString(36)}-${i}`, { notes: 'Reported during the subject-privacy load' }));
      let written: WriterResult;
      let exports: Timed, details: Timed, erasures: Timed;
      let seq = { reports: 0, events: 0 };
      try {
        // A few report details first, so that neither side pays the service's first requests.
        await timedCalls(url, cookie, Array.from({ length: 20 }, () => ({ path: `/reports/${reportId(ROWS)}` })), CONCURRENCY, () => 0);
        const s0 = await readCounters(dbs.productionUrl, serverUrl, ['reports', 'events']);
        await waitQuiet(ctx.options.quietWait * 1000);
        exports = await timedCalls(url, cookie, exportCalls, CONCURRENCY, (b) => Number(b.total));
        ctx.log(`    GET /admin/subjects/<chat_id>: ${describe(exports)}; rows per export median ${median(exports.counts)}, max ${Math.max(...exports.counts)}`);
        const s1 = await readCounters(dbs.productionUrl, serverUrl, ['reports', 'events']);
        seq = { reports: scanDelta(s0, s1, 'reports').seq, events: scanDelta(s0, s1, 'events').seq };
        ctx.log(`    sequential scans during the exports: reports ${seq.reports}, events ${seq.events} (index scans: reports ${scanDelta(s0, s1, 'reports').idx}, events ${scanDelta(s0, s1, 'events').idx})`);
        await waitQuiet(ctx.options.quietWait * 1000);
        details = await timedCalls(url, cookie, detailCalls, CONCURRENCY, () => 1);
        ctx.log(`    GET /reports/<id>: ${describe(details)}`);
        await waitQuiet(ctx.options.quietWait * 1000);
        erasures = await timedCalls(url, cookie, eraseCalls, 1, (b) => sumOf(b.counts));
        ctx.log(`    POST /admin/subjects/<chat_id>/erase: ${describe(erasures)}; rows changed per erasure median ${median(erasures.counts)}, max ${Math.max(...erasures.counts)}`);
      } finally {
        written = await writer.stop();
      }
      ctx.log(`    writer: ${describeWriter(written)}`);

      const e = latencies(exports.sorted);
      const d = latencies(details.sorted);
      const x = latencies(erasures.sorted);
      const failures = exports.failed + details.failed + erasures.failed + written.failed;
      const lines: ResultLine[] = [
        ctx.line('export p50', e.p50, 'ms'),
        ctx.line('export p95', e.p95, 'ms', { text: `< ${EXPORT_P95_GOAL_MS} ms`, ok: e.p95 < EXPORT_P95_GOAL_MS }),
        ctx.line('export max', e.max, 'ms'),
        ctx.line('rows per export (median)', median(exports.counts), 'rows'),
        ctx.line('rows per export (max)', Math.max(...exports.counts), 'rows'),
        ctx.line('GET /reports/<id> p50', d.p50, 'ms'),
        ctx.line('GET /reports/<id> p95', d.p95, 'ms'),
        ctx.line('GET /reports/<id> max', d.max, 'ms'),
        ctx.line('export p50 / report detail p50', ctx.ratio(e.p50, d.p50), 'ratio'),
        ctx.line('erasure p50', x.p50, 'ms'),
        ctx.line('erasure p95', x.p95, 'ms'),
        ctx.line('erasure max', x.max, 'ms'),
        ctx.line('rows changed per erasure (median)', median(erasures.counts), 'rows'),
        ctx.line('reports sequential scans during the exports', seq.reports, 'scans', { text: '= 0', ok: seq.reports === 0 }),
        ctx.line('events sequential scans during the exports', seq.events, 'scans', { text: '= 0', ok: seq.events === 0 }),
        ctx.line('writer creates/s', written.achieved, 'req/s', { text: `>= ${0.98 * WRITES_PER_SECOND}`, ok: written.achieved >= 0.98 * WRITES_PER_SECOND }),
        ctx.line('CPU used by other processes (exports)', exports.otherCores, 'cores'),
        ctx.line('errors and non-200 (exports, details, erasures, writer)', failures, 'requests', { text: '= 0', ok: failures === 0 }),
      ];
      return lines;
    }, { name: 'service' });
  },
};
