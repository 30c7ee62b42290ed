// The yardstick of the single-route scenarios: a request through the service against `GET /` on the
// bare Fastify hello-world (no plugins, no logger), in alternating rounds, so that the ratio is what
// the service's own work costs per request on this machine today.
import type { Comparison, Context, MeasureOptions, ResultLine, Scenario } from '../types.js';
import { formatComparison } from './report.js';

/** A scenario on the shared service and the bare hello-world. */
export const versusBare = (name: string, description: string, run: Scenario['run']): Scenario => ({ name, description, needs: ['service', 'baseline'], run });

export function assertOnlyStatus(codes: Record<string, number>, status: string): void {
  if (Object.keys(codes).some((code) => code !== status)) throw new Error(`expected only ${status}, got ${JSON.stringify(codes)}`);
}

/** `service` against the hello-world, logged; with `status`, any other answer of the service's fails the scenario. */
export async function compareWithBare(ctx: Context, service: MeasureOptions, status?: string): Promise<Comparison> {
  const c = await ctx.compare(service, { url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' });
  ctx.log(formatComparison(c));
  if (status) assertOnlyStatus(c.a.statusCodes, status);
  return c;
}

type Latency = `${'service' | 'bare'} ${'p50' | 'p95' | 'p99'}`;

/** The ratio (against `goal`), both rates, the machine's other load meanwhile, then each of `latencies`. */
export function bareLines(ctx: Context, c: Comparison, goal: { text: string; ok: boolean } | undefined, latencies: Latency[]): ResultLine[] {
  return [
    ctx.line('req/s ratio service/bare', c.ratio, 'ratio', goal),
    ctx.line('service req/s', c.a.reqPerSec, 'req/s'),
    ctx.line('CPU used by other processes meanwhile', (c.a.otherCores + c.b.otherCores) / 2, 'cores'),
    ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
    ...latencies.map((l) => {
      const [side, p] = l.split(' ') as ['service' | 'bare', 'p50' | 'p95' | 'p99'];
      return ctx.line(`${l} latency`, c[side === 'service' ? 'a' : 'b'].latencyMs[p], 'ms');
    }),
  ];
}
