import type { Scenario } from '../types.js';
import { formatComparison } from '../lib/report.js';

export const root: Scenario = {
  name: 'root',
  description: 'GET / through the service vs the bare Fastify hello-world',
  needs: ['service', 'baseline'],
  async run(ctx) {
    const c = await ctx.compare(
      { url: `${ctx.serviceUrl}/`, label: 'service GET /' },
      { url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' },
    );
    ctx.log(formatComparison(c));
    return [
      ctx.line('req/s ratio service/bare', c.ratio, 'ratio', { text: '>= 0.80', ok: c.ratio >= 0.8 }),
      ctx.line('service req/s', c.a.reqPerSec, 'req/s'),
      ctx.line('CPU used by other processes meanwhile', (c.a.otherCores + c.b.otherCores) / 2, 'cores'),
      ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
      ctx.line('service p50 latency', c.a.latencyMs.p50, 'ms'),
      ctx.line('service p99 latency', c.a.latencyMs.p99, 'ms'),
      ctx.line('bare p99 latency', c.b.latencyMs.p99, 'ms'),
    ];
  },
};
