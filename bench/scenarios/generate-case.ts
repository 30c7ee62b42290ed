import type { Scenario } from '../types.js';
import { formatComparison } from '../lib/report.js';

export const generateCase: Scenario = {
  name: 'generate-case',
  description: 'GET /generate/case with the production key (allocates a case id) vs the bare hello-world',
  needs: ['service', 'baseline'],
  async run(ctx) {
    const c = await ctx.compare(
      { url: `${ctx.serviceUrl}/generate/case`, headers: { authorization: ctx.apiKey }, label: 'service GET /generate/case' },
      { url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' },
    );
    ctx.log(formatComparison(c));
    return [
      ctx.line('req/s ratio service/bare', c.ratio, 'ratio'),
      ctx.line('service req/s', c.a.reqPerSec, 'req/s'),
      ctx.line('CPU used by other processes meanwhile', (c.a.otherCores + c.b.otherCores) / 2, 'cores'),
      ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
      ctx.line('service p50 latency', c.a.latencyMs.p50, 'ms'),
      ctx.line('service p95 latency', c.a.latencyMs.p95, 'ms'),
      ctx.line('service p99 latency', c.a.latencyMs.p99, 'ms'),
    ];
  },
};
