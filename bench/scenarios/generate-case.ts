import type { Scenario } from '../types.js';
import { formatMeasurement } from '../lib/report.js';

export const generateCase: Scenario = {
  name: 'generate-case',
  description: 'GET /generate/case with the production key (allocates a case id) vs the bare hello-world',
  needs: ['service', 'baseline'],
  async run(ctx) {
    const bare = await ctx.measure({ url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' });
    ctx.log(formatMeasurement(bare));
    const svc = await ctx.measure({
      url: `${ctx.serviceUrl}/generate/case`,
      headers: { authorization: ctx.apiKey },
      label: 'service GET /generate/case',
    });
    ctx.log(formatMeasurement(svc));
    return [
      ctx.line('req/s ratio service/bare', ctx.ratio(svc.reqPerSec, bare.reqPerSec), 'ratio'),
      ctx.line('service req/s', svc.reqPerSec, 'req/s'),
      ctx.line('service p50 latency', svc.latencyMs.p50, 'ms'),
      ctx.line('service p95 latency', svc.latencyMs.p95, 'ms'),
      ctx.line('service p99 latency', svc.latencyMs.p99, 'ms'),
    ];
  },
};
