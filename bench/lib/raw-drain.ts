// The baseline for queue throughput: the same statements the service runs for `next` + `complete`
// (the stale sweep, the skip-locked claim, the completion with its event), straight through the
// driver by `workers` concurrent loops, no HTTP.
import { performance } from 'node:perf_hooks';
import { claimNextAction, completeAction } from '../../src/queue/queries.js';
import { sweepStale } from '../../src/queue/sweep.js';
import type { Db } from '../../src/platform/db/types.js';

export interface RawDrainResult {
  completed: number;
  elapsedMs: number;
  claimLatencies: number[];
}

export async function rawDrainActions(db: Db, workers: number, total: number, staleTimeoutMs: number): Promise<RawDrainResult> {
  let completed = 0;
  const claimLatencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (completed < total) {
        const t0 = performance.now();
        await sweepStale(db, 'report_actions', { timeoutMs: staleTimeoutMs, correlationId: `raw-${w}` });
        const action = await claimNextAction(db, undefined);
        if (!action) {
          await new Promise((resolve) => setTimeout(resolve, 25));
          continue;
        }
        claimLatencies.push(performance.now() - t0);
        const done = await completeAction(db, { actionId: action.action_id, result: 'success', note: `worker ${w}`, correlationId: `raw-${w}` });
        if (done.outcome !== 'completed') throw new Error(`action ${action.action_id}: ${done.outcome}`);
        completed++;
      }
    }),
  );
  return { completed, elapsedMs: performance.now() - started, claimLatencies };
}
