// The baseline for queue throughput: the same work the service does for `next` + `complete`
// (the stale sweep, the skip-locked claim, then one transaction locking the row, finishing it and
// writing its event), straight through the driver by `workers` concurrent loops, no HTTP.
import { performance } from 'node:perf_hooks';
import { claimNextAction, finishAction, lockAction } from '../../src/queue/queries.js';
import { sweepStale } from '../../src/queue/sweep.js';
import type { Db } from '../../src/platform/db/types.js';
import { recordEvent } from '../../src/platform/events.js';

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
        await db.transaction(async (tx) => {
          const locked = await lockAction(tx, action.action_id);
          if (!locked || locked.status !== 'processing') throw new Error(`action ${action.action_id} is ${locked?.status}`);
          const done = await finishAction(tx, locked.action_id, 'success', `worker ${w}`);
          await recordEvent(tx, {
            type: 'queue.action_completed',
            actor: { kind: 'bot' },
            correlationId: `raw-${w}`,
            reportId: done.report_id,
            isSupervisor: done.queue === 'supervisor',
            before: { status: locked.status },
            after: { status: done.status, result_note: done.result_note },
            data: { action_id: done.action_id, kind: done.kind, queue: done.queue, attempts: done.attempts, note: `worker ${w}` },
          });
        });
        completed++;
      }
    }),
  );
  return { completed, elapsedMs: performance.now() - started, claimLatencies };
}

export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}
