// Preloaded into a service (NODE_OPTIONS=--import <this file>) whose memory a scenario measures: on
// SIGWINCH the process runs a full garbage collection, so that an RSS reading counts what is held,
// not garbage the heap has not yet collected. SIGWINCH because the service's close-with-grace takes
// SIGUSR2 for a shutdown and SIGUSR1 opens the inspector. `--expose-gc` is not allowed in
// NODE_OPTIONS on Node 20; V8 takes the flag at run time, and `gc` appears in new contexts.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const GC_SIGNAL = 'SIGWINCH';
/** The service's extra environment: this file preloaded, and armed. */
export const GC_ON_SIGNAL_ENV = { NODE_OPTIONS: `--import ${import.meta.url}`, BENCH_GC_ON_SIGNAL: '1' };

if (process.env.BENCH_GC_ON_SIGNAL === '1') {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  process.on(GC_SIGNAL, () => gc());
}
