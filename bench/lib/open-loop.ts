// Open-loop load, as people at keyboards make it: timers send on schedule whether or not the last
// answer came back, so a slow answer cannot slow the load down and hide itself.
import { setTimeout as sleep } from 'node:timers/promises';

/** Calls `fn(n)` at start + offset + n * period (absolute times: no drift) until `end`, without awaiting it; records how late each tick fired. */
export async function every(start: number, offset: number, period: number, end: number, late: number[], fn: (n: number) => void): Promise<void> {
  for (let n = 0; ; n++) {
    const due = start + offset + n * period;
    if (due >= end) return;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    late.push(performance.now() - due);
    fn(n);
  }
}
