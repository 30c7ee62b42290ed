// A writer at a fixed rate, open loop: requests go out on the clock whether or not earlier ones have
// answered (a late timer tick sends what is due at once), spread over the instances in turn. What
// it reports is what it achieved: completed 2xx per second and their latencies.
import { performance } from 'node:perf_hooks';
import { quantile } from './stats.js';

export interface WriterRequest {
  path: string;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  body: string;
}

export interface WriterResult {
  target: number;
  sent: number;
  ok: number;
  failed: number;
  seconds: number;
  /** 2xx answers per second over the writer's whole life. */
  achieved: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** The first failure, to show what the service answered. */
  sample?: string;
}

export interface Writer {
  /** 2xx answers so far. */
  completed(): number;
  /** The q-quantile latency (ms) of the 2xx answers from number `from` (a completed() count) to now. */
  latencySince(from: number, q: number): number;
  stop(): Promise<WriterResult>;
}

/** What a writer did, for the run log. */
export const describeWriter = (w: WriterResult): string =>
  `${w.achieved.toFixed(1)}/s of ${w.target} over ${w.seconds.toFixed(0)} s (${w.ok} of ${w.sent} answered 2xx, ${w.failed} failed), ` +
  `p50=${w.latencyMs.p50.toFixed(1)} p99=${w.latencyMs.p99.toFixed(1)} max=${w.latencyMs.max.toFixed(0)} ms${w.sample ? `; first failure: ${w.sample}` : ''}`;

export function startWriter(urls: string[], perSecond: number, request: (i: number) => WriterRequest): Writer {
  const started = performance.now();
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  let failed = 0;
  let sample: string | undefined;
  const send = (i: number): void => {
    const r = request(i);
    const t0 = performance.now();
    const p = fetch(`${urls[i % urls.length]}${r.path}`, { method: r.method, headers: r.headers, body: r.body })
      .then(async (res) => {
        const text = await res.text();
        if (res.ok) latencies.push(performance.now() - t0);
        else {
          failed++;
          sample ??= `${res.status} ${text.slice(0, 300)}`;
        }
      })
      .catch((err: Error) => {
        failed++;
        sample ??= err.message;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    while (sent < due) send(sent++);
  }, 5);
  return {
    completed: () => latencies.length,
    latencySince: (from, q) => quantile(latencies.slice(from).sort((a, b) => a - b), q),
    async stop() {
      clearInterval(timer);
      const seconds = (performance.now() - started) / 1000;
      await Promise.all([...inFlight]);
      latencies.sort((a, b) => a - b);
      return {
        target: perSecond,
        sent,
        ok: latencies.length,
        failed,
        seconds,
        achieved: latencies.length / seconds,
        latencyMs: { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies[latencies.length - 1] ?? Number.NaN },
        ...(sample === undefined ? {} : { sample }),
      };
    },
  };
}
