import type { Scenario } from '../types.js';
import { formatMeasurement } from '../lib/report.js';

export const root: Scenario = {
  name: 'root',
  description: 'GET / through the service vs the bare Fastify hello-world',
  needs: ['service', 'baseline'],
  async run(ctx) {
    const bare = await ctx.measure({ url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' });
    ctx.log(formatMeasurement(bare));
    const svc = await ctx.measure({ url: `${ctx.serviceUrl}/`, label: 'service GET /' });
    ctx.log(formatMeasurement(svc));
    const r = ctx.ratio(svc.reqPerSec, bare.reqPerSec);
    return [
      ctx.line('req/s ratio service/bare', r, 'ratio', { text: '>= 0.80', ok: r >= 0.8 }),
      ctx.line('service req/s', svc.reqPerSec, 'req/s'),
      ctx.line('bare req/s', bare.reqPerSec, 'req/s'),
      ctx.line('service p99 latency', svc.latencyMs.p99, 'ms'),
      ctx.line('bare p99 latency', bare.latencyMs.p99, 'ms'),
    ];
  },
};
