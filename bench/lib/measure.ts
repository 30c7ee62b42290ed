import autocannon from 'autocannon';
import type { Comparison, MeasureOptions, Measurement } from '../types.js';
import { BUSY_CORES, OtherLoad, waitQuiet } from './machine.js';
import { httpGet } from './proc.js';
import { quantile } from './stats.js';

export interface Defaults {
  connections: number;
  duration: number;
  warmup: number;
  rounds: number;
  /** Seconds to wait at most for other processes to go quiet before a load run. */
  quietWait: number;
}

/** What one autocannon run answered, with every response's latency (ms). */
export interface LoadRun {
  latencies: number[];
  completed: number;
  seconds: number;
  errors: number;
  non2xx: number;
  statusCodes: Record<string, number>;
}

export type LoadRunOptions = Pick<MeasureOptions, 'url' | 'method' | 'headers' | 'body' | 'idReplacement' | 'path' | 'headersFor'> & { connections: number; duration: number };

/** One autocannon run, the shared settings of every load in the harness (no pipelining, 10 s timeout). */
export function runLoad(opts: LoadRunOptions): Promise<LoadRun> {
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: opts.url,
        method: opts.method ?? 'GET',
        headers: opts.headers ?? {},
        ...(opts.body === undefined ? {} : { body: opts.body }),
        ...(opts.idReplacement ? { idReplacement: true } : {}),
        ...(opts.path || opts.headersFor
          ? {
              requests: [
                {
                  setupRequest: (request: autocannon.Request) => ({
                    ...request,
                    ...(opts.path ? { path: opts.path() } : {}),
                    ...(opts.headersFor ? { headers: { ...request.headers, ...opts.headersFor() } } : {}),
                  }),
                },
              ],
            }
          : {}),
        connections: opts.connections,
        duration: opts.duration,
        pipelining: 1,
        timeout: 10,
      },
      (err: unknown, r: autocannon.Result) => {
        if (err) return reject(err as Error);
        const statusCodes: Record<string, number> = {};
        for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
        resolve({ latencies, completed: r.requests.total, seconds: r.duration, errors: r.errors, non2xx: r.non2xx, statusCodes });
      },
    );
    // Own samples give a true p95 and let rounds be pooled; autocannon's histogram only exposes p90/p97.5.
    instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });
}

interface Raw extends LoadRun {
  otherCores: number;
  quietWaitMs: number;
}

async function cannon(opts: MeasureOptions, connections: number, duration: number, quietWait: number): Promise<Raw> {
  const quiet = await waitQuiet(quietWait * 1000);
  const load = new OtherLoad();
  const run = await runLoad({ ...opts, connections, duration });
  return { ...run, otherCores: load.cores(), quietWaitMs: quiet.waitedMs };
}

/** Several runs' answers together: every latency (sorted), and the counts added up. */
export function pool(runs: readonly LoadRun[]) {
  const sum = (f: (r: LoadRun) => number) => runs.reduce((a, r) => a + f(r), 0);
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [c, n] of Object.entries(r.statusCodes)) statusCodes[c] = (statusCodes[c] ?? 0) + n;
  const sorted = Float64Array.from(runs.flatMap((r) => r.latencies)).sort();
  return { sorted, total: sum((r) => r.completed), errors: sum((r) => r.errors), non2xx: sum((r) => r.non2xx), statusCodes };
}

/** p50, p95, p99 and max of `sorted` latencies. */
export const latencies = (sorted: Float64Array) => ({ p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] ?? Number.NaN });

function summarize(opts: MeasureOptions, connections: number, raws: Raw[]): Measurement {
  const { sorted, total, ...counts } = pool(raws);
  const seconds = raws.reduce((a, r) => a + r.seconds, 0);
  return {
    label: opts.label ?? `${opts.method ?? 'GET'} ${opts.url}`,
    url: opts.url,
    connections,
    duration: Math.round(seconds * 10) / 10,
    reqPerSec: seconds > 0 ? total / seconds : Number.NaN,
    total,
    latencyMs: { mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : Number.NaN, ...latencies(sorted) },
    ...counts,
    otherCores: seconds > 0 ? raws.reduce((a, r) => a + r.otherCores * r.seconds, 0) / seconds : 0,
    quietWaitMs: raws.reduce((a, r) => a + r.quietWaitMs, 0),
  };
}

const clean = (r: { otherCores: number }): boolean => r.otherCores < BUSY_CORES;
const failed = (r: { errors: number; non2xx: number }): boolean => r.errors + r.non2xx > 0;

/** Warm-up run (discarded), then one measured run, redone (up to twice) if other processes loaded the machine. */
export async function measure(opts: MeasureOptions, d: Defaults): Promise<Measurement> {
  const connections = opts.connections ?? d.connections;
  if (d.warmup > 0) await cannon(opts, connections, d.warmup, 0);
  let run = await cannon(opts, connections, opts.duration ?? d.duration, d.quietWait);
  for (let retry = 0; retry < 2 && !clean(run) && !failed(run); retry++) {
    run = await cannon(opts, connections, opts.duration ?? d.duration, d.quietWait);
  }
  return summarize(opts, connections, [run]);
}

/** One load run of a side: `seconds` long, after waiting at most `quietWait` seconds for quiet. */
export type SideRun<R> = (seconds: number, quietWait: number) => Promise<R>;

/**
 * Two sides in alternating rounds (A B, B A, ...) of `seconds` each, after a discarded warm-up of
 * each, so that drift in what the machine gives us (CPU steal, a neighbour's build) lands on both
 * sides rather than on one. A round during which other processes loaded the machine is redone, up
 * to `rounds` extra times, unless a side failed in it. Returns each side's kept runs, round by round.
 */
export async function alternateRounds<R extends { otherCores: number; errors: number; non2xx: number }>(
  sides: readonly [SideRun<R>, SideRun<R>],
  o: { rounds: number; seconds: number; warmup: number; quietWait: number },
): Promise<{ kept: [R[], R[]]; redone: number }> {
  if (o.warmup > 0) for (const side of sides) await side(o.warmup, 0);
  const kept: [R[], R[]] = [[], []];
  let redone = 0;
  for (let i = 0; kept[0].length < o.rounds; i++) {
    const got: R[] = [];
    for (const s of i % 2 === 0 ? [0, 1] : [1, 0]) got[s] = await sides[s]!(o.seconds, o.quietWait);
    const [x, y] = got as [R, R];
    if (!(clean(x) && clean(y)) && !failed(x) && !failed(y) && redone < o.rounds) {
      redone++;
      continue;
    }
    kept[0].push(x);
    kept[1].push(y);
  }
  return { kept, redone };
}

/** Measures `a` and `b` in alternating rounds that share the duration (alternateRounds); ratio = a/b. */
export async function compare(a: MeasureOptions, b: MeasureOptions, d: Defaults): Promise<Comparison> {
  const connections = a.connections ?? d.connections;
  const rounds = Math.max(1, Math.round(d.rounds));
  // Whole seconds: autocannon only stops on its 1 s sampling tick.
  const seconds = Math.max(1, Math.round((a.duration ?? d.duration) / rounds));
  const side = (opts: MeasureOptions): SideRun<Raw> => (s, quietWait) => cannon(opts, connections, s, quietWait);
  const { kept: [ra, rb], redone } = await alternateRounds([side(a), side(b)], { rounds, seconds, warmup: d.warmup, quietWait: d.quietWait });
  const roundRatios = ra.map((x, i) => ratio(x.completed / x.seconds, rb[i]!.completed / rb[i]!.seconds));
  const ma = summarize(a, connections, ra);
  const mb = summarize(b, connections, rb);
  return { a: ma, b: mb, ratio: ratio(ma.reqPerSec, mb.reqPerSec), roundRatios, discardedRounds: redone };
}

/** One request outside the load, to show what a failing endpoint answers. */
export async function sampleResponse(opts: MeasureOptions): Promise<string> {
  if ((opts.method ?? 'GET') !== 'GET') return '(no sample for non-GET)';
  try {
    const res = await httpGet(opts.url, opts.headers ?? {});
    return `${res.status} ${res.body.slice(0, 300)}`;
  } catch (err) {
    return `request failed: ${(err as Error).message}`;
  }
}

export function ratio(a: number, b: number): number {
  return b === 0 ? Number.NaN : a / b;
}
