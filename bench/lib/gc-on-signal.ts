// Preloaded into a service (NODE_OPTIONS=--import <this file>) whose memory a scenario measures: on
// SIGWINCH the process runs a full garbage collection and writes process.memoryUsage() to
// <dir>/memory-<pid>.json, and the event-loop delay since the previous signal (perf_hooks'
// histogram, percentiles in ms) to <dir>/loop-<pid>.json. RSS (read from /proc) still varies by several MB from one collection to
// the next, as V8 and malloc hand pages back when they choose; the heap used after a collection
// is what is held. SIGWINCH because close-with-grace takes SIGUSR2 for a shutdown and SIGUSR1 opens
// the inspector. `--expose-gc` is not allowed in NODE_OPTIONS on Node 20; V8 takes the flag at run
// time, and `gc` appears in new contexts.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const GC_SIGNAL = 'SIGWINCH';

/** The service's extra environment: this file preloaded, writing into `dir`. */
export const gcOnSignalEnv = (dir: string) => ({ NODE_OPTIONS: `--import ${import.meta.url}`, BENCH_GC_ON_SIGNAL: dir });

/** What the process `pid` wrote at its last signal. */
export const memoryUsageOf = (dir: string, pid: number) => JSON.parse(readFileSync(join(dir, `memory-${pid}.json`), 'utf8')) as NodeJS.MemoryUsage;

export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

/** The event-loop delay of process `pid` between its last two signals, in ms. */
export const loopDelayOf = (dir: string, pid: number) => JSON.parse(readFileSync(join(dir, `loop-${pid}.json`), 'utf8')) as LoopDelay;

const dir = process.env.BENCH_GC_ON_SIGNAL;
if (dir) {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  process.on(GC_SIGNAL, () => {
    // Read before the collection, whose own pause would otherwise count as the load's.
    const ms = (ns: number) => ns / 1e6;
    writeFileSync(join(dir, `loop-${process.pid}.json`), JSON.stringify({ p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) }));
    loop.reset();
    gc();
    writeFileSync(join(dir, `memory-${process.pid}.json`), JSON.stringify(process.memoryUsage()));
  });
}
