import autocannon from 'autocannon';
import type { MeasureOptions, Measurement } from '../types.js';
import { httpGet } from './proc.js';

interface Defaults {
  connections: number;
  duration: number;
  warmup: number;
}

function cannon(opts: MeasureOptions, connections: number, duration: number, latencies: number[] | null): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: opts.url,
        method: opts.method ?? 'GET',
        headers: opts.headers ?? {},
        ...(opts.body === undefined ? {} : { body: opts.body }),
        connections,
        duration,
        pipelining: 1,
        timeout: 10,
      },
      (err: unknown, result: autocannon.Result) => (err ? reject(err as Error) : resolve(result)),
    );
    // Own samples give a true p95; autocannon's histogram only exposes p90/p97.5.
    if (latencies) instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, idx)] ?? Number.NaN;
}

/** Warm-up run (discarded), then the measured run. */
export async function measure(opts: MeasureOptions, defaults: Defaults): Promise<Measurement> {
  const connections = opts.connections ?? defaults.connections;
  const duration = opts.duration ?? defaults.duration;
  if (defaults.warmup > 0) await cannon(opts, connections, defaults.warmup, null);
  const latencies: number[] = [];
  const r = await cannon(opts, connections, duration, latencies);
  const sorted = Float64Array.from(latencies).sort();
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
  const mean = sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : Number.NaN;
  return {
    label: opts.label ?? `${opts.method ?? 'GET'} ${opts.url}`,
    url: opts.url,
    connections,
    duration,
    reqPerSec: r.requests.mean,
    total: r.requests.total,
    latencyMs: {
      mean,
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99: percentile(sorted, 99),
      max: sorted.length ? (sorted[sorted.length - 1] ?? Number.NaN) : Number.NaN,
    },
    errors: r.errors,
    non2xx: r.non2xx,
    statusCodes,
  };
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
