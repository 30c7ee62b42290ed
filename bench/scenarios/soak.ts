// A long run under the mix production sees, to catch what short runs cannot: memory that only
// grows, a slowly lengthening event loop, errors that come with time. On PostgreSQL, one instance:
// for SOAK_SECONDS at 50 connections in all, the dashboard's reads (bench/lib/dashboard-mix.ts)
// on most of them, the bot's queue traffic (claim, complete, poll when empty) on BOT_WORKERS, and
// report creation at WRITES_PER_SECOND throughout. Memory is read after a full collection once the
// warm-up is over and then every minute (gc-on-signal.ts), with the event-loop delay of each minute.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../src/platform/db/types.js';
import { createFleetClient, InstanceDown } from '../lib/bot-fleet.js';
import { NAMELESS, reportBody, startCreating } from '../lib/create-report.js';
import { auditPath, listPath, randomListQuery, randomPhrase, reportId } from '../lib/dashboard-mix.js';
import { GC_SIGNAL, gcOnSignalEnv, loopDelayOf, memoryUsageOf, type LoopDelay } from '../lib/gc-on-signal.js';
import { generateReportsAndEvents } from '../lib/generate-data.js';
import { describeWriter, type WriterResult } from '../lib/open-loop-writer.js';
import { withOwnService, type OwnService } from '../lib/own-service.js';
import { memoryMb } from '../lib/proc.js';
import { seedActions } from '../lib/queue-seed.js';
import { API_KEY, freshDataDir } from '../lib/service.js';
import { describeSplit, measureSplit, type SplitLoadResult } from '../lib/split-load.js';
import { percentile } from '../lib/stats.js';
import type { Context, ResultLine, Scenario } from '../types.js';

/** The measured run; SOAK_SECONDS in the bench's environment shortens it for a trial. */
const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const WARMUP_SECONDS = 60;
const SAMPLE_SECONDS = 60;
const ROWS = 100_000;
/** Pending report actions at the start: more than the bot drains in the run, so it claims throughout. */
const ACTIONS = 150_000;
const BOT_WORKERS = 8;
const WRITES_PER_SECOND = 20;
/** Of the dashboard's requests: list pages, then full reports, then audit searches (case ids and phrases). */
const LIST_SHARE = 0.6;
const REPORT_SHARE = 0.25;
const GC_WAIT_MS = 2_000;

// --- Goals (issue 14) ---
const RSS_GROWTH_GOAL = 0.1;

function dashboardPath(): string {
  const r = Math.random();
  if (r < LIST_SHARE) return listPath(randomListQuery());
  if (r < LIST_SHARE + REPORT_SHARE) return `/reports/${reportId(ROWS)}`;
  return auditPath(Math.random() < 0.5 ? reportId(ROWS) : randomPhrase(ROWS));
}

interface Bot {
  stop(): Promise<{ claimed: number; completed: number; idlePolls: number; unexpected: number; sample?: string }>;
}

/** The bot: claim, complete, and poll every 100 ms while the queue is empty, until stopped. */
function startBot(url: string): Bot {
  const client = createFleetClient(BOT_WORKERS);
  const headers = { authorization: API_KEY };
  const tally = { claimed: 0, completed: 0, idlePolls: 0, unexpected: 0, sample: undefined as string | undefined };
  let running = true;
  const unexpected = (what: string) => {
    tally.unexpected++;
    tally.sample ??= what;
  };
  const work = async () => {
    while (running) {
      try {
        const next = await client.request('GET', `${url}/actions/next`, headers);
        if (next.status === 204) {
          tally.idlePolls++;
          await sleep(100);
          continue;
        }
        if (next.status !== 200) {
          unexpected(`next ${next.status} ${next.body.slice(0, 200)}`);
          continue;
        }
        tally.claimed++;
        const id = (JSON.parse(next.body) as { action: { action_id: number } }).action.action_id;
        const done = await client.request('POST', `${url}/actions/${id}/complete`, headers, JSON.stringify({ result: 'success' }));
        if (done.status === 200) tally.completed++;
        else unexpected(`complete ${done.status} ${done.body.slice(0, 200)}`);
      } catch (err) {
        if (!(err instanceof InstanceDown)) throw err;
        unexpected(`connection: ${err.message}`);
        await sleep(100);
      }
    }
  };
  const workers = Array.from({ length: BOT_WORKERS }, work);
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      client.close();
      return tally;
    },
  };
}

interface Sample {
  second: number;
  rssMb: number;
  heapMb: number;
  loop: LoopDelay;
}

async function sample(service: OwnService, dir: string, second: number): Promise<Sample> {
  const pid = service.instances[0]!.pid;
  process.kill(pid, GC_SIGNAL);
  await sleep(GC_WAIT_MS);
  const usage = memoryUsageOf(dir, pid);
  return { second, rssMb: memoryMb(pid).rss, heapMb: (usage.heapUsed + usage.external) / 1024 / 1024, loop: loopDelayOf(dir, pid) };
}

async function soak(ctx: Context, service: OwnService, dir: string): Promise<ResultLine[]> {
  const url = service.url;
  const connections = ctx.options.connections - BOT_WORKERS;
  const load = (label: string, duration: number) =>
    measureSplit({ urls: [url], path: dashboardPath, headers: { authorization: API_KEY }, connections, duration, warmup: 0, quietWait: 0, label });
  const writer = startCreating([url], WRITES_PER_SECOND, (i) => reportBody(`SOAK-${process.pid}-${i}`, { reason: 'Soak', notes: 'n', evidence: 'e', ...NAMELESS }));
  const bot = startBot(url);
  let measured: SplitLoadResult | undefined;
  let written: WriterResult;
  let bots: Awaited<ReturnType<Bot['stop']>>;
  const samples: Sample[] = [];
  try {
    await load('warm-up', WARMUP_SECONDS);
    samples.push(await sample(service, dir, 0));
    ctx.log(`    after the warm-up: RSS ${samples[0]!.rssMb.toFixed(1)} MB, heap ${samples[0]!.heapMb.toFixed(1)} MB`);
    const started = Date.now();
    const sampler = (async () => {
      for (let s = SAMPLE_SECONDS; s < SOAK_SECONDS; s += SAMPLE_SECONDS) {
        await sleep(Math.max(0, started + s * 1000 - Date.now()));
        const taken = await sample(service, dir, s);
        samples.push(taken);
        ctx.log(`    ${s} s: RSS ${taken.rssMb.toFixed(1)} MB, heap ${taken.heapMb.toFixed(1)} MB, event-loop delay p99 ${taken.loop.p99.toFixed(1)} ms (max ${taken.loop.max.toFixed(0)})`);
      }
    })();
    measured = await load('dashboard mix', SOAK_SECONDS);
    await sampler;
  } finally {
    written = await writer.stop();
    bots = await bot.stop();
  }
  samples.push(await sample(service, dir, SOAK_SECONDS));
  // Growth from the lower of the readings after the warm-up and a minute later: RSS right after
  // the warm-up can still hold the start's garbage that the allocator returns later, which would
  // flatter the figure.
  const first = samples.slice(0, 2).reduce((low, s) => (s.rssMb < low.rssMb ? s : low));
  const last = samples.at(-1)!;
  const growth = (last.rssMb - first.rssMb) / first.rssMb;
  const loopP99s = samples.slice(1).map((s) => s.loop.p99);
  ctx.log(`    dashboard: ${describeSplit(measured)}`);
  ctx.log(`    bot: ${bots.claimed} claimed, ${bots.completed} completed, ${bots.idlePolls} empty polls, ${bots.unexpected} unexpected answers${bots.sample ? `; first: ${bots.sample}` : ''}`);
  ctx.log(`    writer: ${describeWriter(written)}`);
  ctx.log(`    RSS ${first.rssMb.toFixed(1)} -> ${last.rssMb.toFixed(1)} MB (${(growth * 100).toFixed(1)}%), heap ${first.heapMb.toFixed(1)} -> ${last.heapMb.toFixed(1)} MB`);
  const errors = measured.errors + measured.non2xx + bots.unexpected + written.failed;
  return [
    ctx.line('soak seconds (after a 60 s warm-up)', SOAK_SECONDS, 's'),
    ctx.line('dashboard req/s', measured.reqPerSec, 'req/s'),
    ctx.line('dashboard p99', measured.latencyMs.p99, 'ms'),
    ctx.line('bot items completed', bots.completed, 'items'),
    ctx.line('reports created', written.ok, 'requests'),
    ctx.line('errors (dashboard, bot, writer)', errors, 'requests', { text: '= 0', ok: errors === 0 }),
    ctx.line(`RSS growth after warm-up (from ${first.second} s)`, growth * 100, '%', { text: `<= ${RSS_GROWTH_GOAL * 100}%`, ok: growth <= RSS_GROWTH_GOAL }),
    ctx.line('event-loop delay p99, worst minute', Math.max(...loopP99s), 'ms'),
    ctx.line('event-loop delay p99, median minute', percentile(loopP99s, 0.5), 'ms'),
  ];
}

export const soakScenario: Scenario = {
  name: 'soak',
  description: `${SOAK_SECONDS / 60} minutes at 50 connections: the dashboard's reads, the bot's queue traffic and ${WRITES_PER_SECOND} creates/s; errors, RSS growth and event-loop delay (PostgreSQL only)`,
  needs: [],
  onlyWhenNamed: true,
  async run(ctx) {
    if (ctx.store !== 'postgres') {
      ctx.log('    skipped: the soak runs on PostgreSQL (--pg <url>)');
      return [];
    }
    const dir = freshDataDir();
    const prepare = async (db: Db) => {
      await generateReportsAndEvents(db, { reports: ROWS, events: ROWS });
      await seedActions(db, ACTIONS, 'SOAK');
    };
    return withOwnService(ctx, (service) => soak(ctx, service, dir), { prepare, env: gcOnSignalEnv(dir) });
  },
};
