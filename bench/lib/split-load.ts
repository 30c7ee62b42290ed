// Load spread over several instances of the service, as a load balancer would: one autocannon per
// instance, the connections split between them, all running at once; the latencies are pooled so
// that percentiles are those of every request. A new path per request (varied ids, pages, filters).
import { OtherLoad, waitQuiet } from './machine.js';
import { latencies, pool, runLoad, type LoadRun } from './measure.js';
import { httpGet } from './proc.js';

/** `connections`, `duration`, `warmup` and `quietWait` are the run's options' names: `{ ...ctx.options, … }` takes the run's. */
export interface SplitLoadOptions {
  /** One base URL per instance. */
  urls: string[];
  /** Path and query of each request, called once per request. */
  path: () => string;
  headers?: Record<string, string>;
  connections: number;
  /** Measured seconds (whole seconds: autocannon stops on its 1 s tick). */
  duration: number;
  /** Discarded seconds before the measured run (its requests are counted in `sent`). */
  warmup: number;
  /** Seconds to wait at most for other processes to go quiet before the measured run. */
  quietWait: number;
  label: string;
}

export interface SplitLoadResult {
  label: string;
  reqPerSec: number;
  /** Measured responses. */
  total: number;
  /**
   * Requests sent in the warm-up and the measured run together, those still unanswered when the
   * load stopped included (the service runs them all the same).
   */
  sent: number;
  latencyMs: { p50: number; p95: number; p99: number; max: number };
  errors: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  /** Cores other processes used during the measured run. */
  otherCores: number;
  /** One response when some failed, to show what the service answered. */
  sample?: string;
}

function cannon(url: string, opts: SplitLoadOptions, connections: number, duration: number, path: () => string): Promise<LoadRun> {
  return runLoad({ url, headers: opts.headers ?? {}, path, connections, duration });
}

/** Every instance at once, `connections` shared out as evenly as they go. */
async function together(opts: SplitLoadOptions, duration: number, path: () => string): Promise<LoadRun[]> {
  const n = opts.urls.length;
  return Promise.all(opts.urls.map((url, i) => cannon(url, opts, Math.floor(opts.connections / n) + (i < opts.connections % n ? 1 : 0), duration, path)));
}

/** What a split load measured, for the run log. */
export const describeSplit = (m: SplitLoadResult): string =>
  `${m.reqPerSec.toFixed(0)} req/s (${m.total} req) p50=${m.latencyMs.p50.toFixed(1)} p95=${m.latencyMs.p95.toFixed(1)} ` +
  `p99=${m.latencyMs.p99.toFixed(1)} max=${m.latencyMs.max.toFixed(0)} ms` +
  (m.errors + m.non2xx > 0 ? `  ERRORS ${m.errors}, non-2xx ${m.non2xx} ${JSON.stringify(m.statusCodes)}; sample: ${m.sample}` : '') +
  (m.otherCores >= 0.25 ? `  [other processes used ${m.otherCores.toFixed(2)} cores meanwhile]` : '');

export async function measureSplit(opts: SplitLoadOptions): Promise<SplitLoadResult> {
  if (opts.connections < opts.urls.length) throw new Error(`${opts.label}: fewer connections than instances`);
  let sent = 0;
  const path = () => {
    sent++;
    return opts.path();
  };
  if (opts.warmup > 0) await together(opts, opts.warmup, path);
  await waitQuiet(opts.quietWait * 1000);
  const load = new OtherLoad();
  const runs = await together(opts, opts.duration, path);
  const otherCores = load.cores();
  const { sorted, total, errors, non2xx, statusCodes } = pool(runs);
  // The instances ran side by side: the wall time is the longest run's, not their sum.
  const seconds = Math.max(...runs.map((r) => r.seconds));
  let sample: string | undefined;
  if (errors + non2xx > 0) {
    const url = `${opts.urls[0]}${opts.path()}`;
    sample = await httpGet(url, opts.headers ?? {}, 10_000).then((r) => `${url} -> ${r.status} ${r.body.slice(0, 300)}`, (e: Error) => `${url} -> ${e.message}`);
  }
  return {
    label: opts.label,
    reqPerSec: seconds > 0 ? total / seconds : Number.NaN,
    total,
    sent,
    latencyMs: latencies(sorted),
    errors,
    non2xx,
    statusCodes,
    otherCores,
    ...(sample === undefined ? {} : { sample }),
  };
}
