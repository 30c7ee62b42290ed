// Metrics overhead (issue 20): a session-authenticated GET /auth/me on a service with METRICS_PORT
// set against the same on a service without it, side by side in alternating rounds. The metrics
// side is scraped every second meanwhile (Prometheus scrapes every 15 s by default: this is the
// costlier case), and its scrapes must all succeed.
import { freePort, httpGet, settle, stop } from '../lib/proc.js';
import { formatComparison } from '../lib/report.js';
import { signIn } from '../lib/sign-in.js';
import { startFakeChat } from '../lib/fake-chat.js';
import { countAsOurs } from '../lib/machine.js';
import { createBenchDatabases } from '../lib/pg.js';
import { freshDataDir, startService } from '../lib/service.js';
import type { Scenario } from '../types.js';

/** Issue goal: metrics on at least 95% of the throughput with metrics off. */
const GOAL = 0.95;
const SCRAPE_EVERY_MS = 1_000;

export const metricsOverhead: Scenario = {
  name: 'metrics-overhead',
  description: 'GET /auth/me with METRICS_PORT set (scraped every second) vs unset, two services side by side',
  needs: [],
  async run(ctx) {
    const chat = await startFakeChat();
    const metricsPort = await freePort();
    const start = async (extraEnv: Record<string, string>) => {
      const dbs = ctx.options.pg ? await createBenchDatabases(ctx.options.pg) : null;
      if (dbs) countAsOurs('postgres');
      return (await startService({ dataDir: freshDataDir(), ...(dbs ?? {}), extraEnv: { ...chat.env, ...extraEnv } })).child;
    };
    const on = await start({ METRICS_PORT: String(metricsPort) });
    const off = await start({});
    try {
      await settle(on);
      await settle(off);
      const [cookieOn, cookieOff] = [
        await signIn(on.url, { chatId: '300000000000000011', clearance: 3 }),
        await signIn(off.url, { chatId: '300000000000000011', clearance: 3 }),
      ];
      const scrapes = { ok: 0, failed: 0, ms: [] as number[] };
      const scrape = async () => {
        const started = performance.now();
        const res = await httpGet(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => ({ status: 0, body: '' }));
        scrapes.ms.push(performance.now() - started);
        if (res.status === 200 && res.body.includes('cms_http_requests_total')) scrapes.ok++;
        else scrapes.failed++;
      };
      const timer = setInterval(() => void scrape(), SCRAPE_EVERY_MS);
      let c;
      try {
        c = await ctx.compare(
          { url: `${on.url}/auth/me`, headers: { cookie: cookieOn }, label: 'metrics on GET /auth/me' },
          { url: `${off.url}/auth/me`, headers: { cookie: cookieOff }, label: 'metrics off GET /auth/me' },
        );
      } finally {
        clearInterval(timer);
      }
      ctx.log(formatComparison(c));
      if (scrapes.failed > 0) throw new Error(`${scrapes.failed} of ${scrapes.ok + scrapes.failed} scrapes failed`);
      const sorted = scrapes.ms.sort((a, b) => a - b);
      return [
        ctx.line('req/s ratio metrics on/off', c.ratio, 'ratio', { text: `>= ${GOAL}`, ok: c.ratio >= GOAL }),
        ctx.line('round ratios min', Math.min(...c.roundRatios), 'ratio'),
        ctx.line('round ratios max', Math.max(...c.roundRatios), 'ratio'),
        ctx.line('metrics on req/s', c.a.reqPerSec, 'req/s'),
        ctx.line('metrics off req/s', c.b.reqPerSec, 'req/s'),
        ctx.line('metrics on p99 latency', c.a.latencyMs.p99, 'ms'),
        ctx.line('metrics off p99 latency', c.b.latencyMs.p99, 'ms'),
        ctx.line('scrapes during the load', scrapes.ok, 'scrapes'),
        ctx.line('scrape time p50 (under load)', sorted[Math.floor(sorted.length / 2)] ?? 0, 'ms'),
        ctx.line('CPU used by other processes meanwhile', (c.a.otherCores + c.b.otherCores) / 2, 'cores'),
      ];
    } finally {
      await stop(on);
      await stop(off);
    }
  },
};
