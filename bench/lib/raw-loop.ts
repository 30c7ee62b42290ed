// The baseline for "over HTTP vs the same work straight through the driver": `concurrency`
// workers run `op` back to back for `seconds`, as autocannon's connections would.
import { performance } from 'node:perf_hooks';
import { percentile } from './stats.js';

export interface LoopResult {
  opsPerSec: number;
  total: number;
  errors: number;
  latencyMs: { p50: number; p95: number; p99: number };
}

export async function runLoop(concurrency: number, seconds: number, op: (i: number) => Promise<unknown>): Promise<LoopResult> {
  const until = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          await op(next++);
          latencies.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const at = (q: number) => percentile(latencies, q);
  return { opsPerSec: latencies.length / elapsed, total: latencies.length, errors, latencyMs: { p50: at(0.5), p95: at(0.95), p99: at(0.99) } };
}
