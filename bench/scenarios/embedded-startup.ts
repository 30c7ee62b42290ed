import { setTimeout as sleep } from 'node:timers/promises';
import type { Context, Scenario } from '../types.js';
import { OtherLoad, waitQuiet } from '../lib/machine.js';
import { httpGet, memoryMb, stop, waitReady } from '../lib/proc.js';
import { API_KEY, DEMO_API_KEY, freshDataDir, READY_TEXT, spawnService } from '../lib/service.js';

const RESTARTS = 3;
const IDLE_MS = 3000;
const RSS_GOAL_MB = 500;

interface StartSample {
  readyMs: number;
  rss: number;
  hwm: number;
  exitCode: number | null;
  stopMs: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

/** Touch both environments so the memory figure includes both databases in use, not just opened. */
async function touchBoth(url: string): Promise<void> {
  for (const [host, key] of [['localhost', API_KEY], ['demo.localhost', DEMO_API_KEY]] as const) {
    const res = await httpGet(`${url}/generate/case`, { host, authorization: key });
    if (res.status !== 200) throw new Error(`GET /generate/case on ${host} answered ${res.status}: ${res.body.slice(0, 200)}`);
  }
}

async function startOnce(ctx: Context, dataDir: string, label: string): Promise<StartSample> {
  await waitQuiet(ctx.options.quietWait * 1000);
  const load = new OtherLoad();
  const child = await spawnService({ dataDir });
  let readyMs: number;
  let busy: number;
  let mem: { rss: number; hwm: number };
  try {
    readyMs = await waitReady(child, READY_TEXT);
    busy = load.cores();
    await touchBoth(child.url);
    await sleep(IDLE_MS);
    mem = memoryMb(child.pid);
  } catch (err) {
    await stop(child, 3000);
    throw err;
  }
  const stopped = await stop(child);
  const exit = stopped.killed ? 'SIGKILL after 10 s' : `exit ${stopped.code ?? stopped.signal}`;
  ctx.log(
    `    ${label}: ready ${(readyMs / 1000).toFixed(2)} s, RSS ${mem.rss.toFixed(0)} MB (peak ${mem.hwm.toFixed(0)} MB), ` +
      `SIGTERM -> ${exit} in ${stopped.ms.toFixed(0)} ms${busy >= 0.1 ? ` [other processes used ${busy.toFixed(2)} cores while starting]` : ''}`,
  );
  return { readyMs, ...mem, exitCode: stopped.killed ? null : stopped.code, stopMs: stopped.ms };
}

export const embeddedStartup: Scenario = {
  name: 'embedded-startup',
  description: 'Embedded PGlite store: first start (initdb x2), restarts, idle RSS with both environments open',
  needs: [],
  async run(ctx) {
    const dataDir = freshDataDir();
    const first = await startOnce(ctx, dataDir, 'first start (fresh DATA_DIR)');
    const restarts: StartSample[] = [];
    for (let i = 1; i <= RESTARTS; i++) restarts.push(await startOnce(ctx, dataDir, `restart ${i}`));
    const all = [first, ...restarts];
    const restartReady = median(restarts.map((r) => r.readyMs)) / 1000;
    const restartRss = median(restarts.map((r) => r.rss));
    const clean = all.filter((s) => s.exitCode === 0).length;
    return [
      ctx.line('first start to ready', first.readyMs / 1000, 's', { text: '< 10 s', ok: first.readyMs < 10_000 }),
      ctx.line(`restart to ready (median of ${RESTARTS})`, restartReady, 's', { text: '< 3 s', ok: restartReady < 3 }),
      ctx.line('idle RSS after first start', first.rss, 'MB', { text: `< ${RSS_GOAL_MB} MB`, ok: first.rss < RSS_GOAL_MB }),
      ctx.line(`idle RSS after restart (median)`, restartRss, 'MB', { text: `< ${RSS_GOAL_MB} MB`, ok: restartRss < RSS_GOAL_MB }),
      ctx.line('peak RSS (VmHWM) first start', first.hwm, 'MB'),
      ctx.line('peak RSS (VmHWM) restart (median)', median(restarts.map((r) => r.hwm)), 'MB'),
      ctx.line('graceful stop (max)', Math.max(...all.map((s) => s.stopMs)), 'ms'),
      ctx.line(`SIGTERM exits with 0 (of ${all.length})`, clean, 'starts', { text: `= ${all.length}`, ok: clean === all.length }),
    ];
  },
};
