import { formatComparison } from '../lib/report.js';
import { signIn } from '../lib/sign-in.js';
import type { Scenario } from '../types.js';

/** Issue goal: a session-authenticated GET /auth/me at least a quarter of bare Fastify. */
const GOAL = 0.25;

export const authMe: Scenario = {
  name: 'auth-me',
  description: 'session-authenticated GET /auth/me (live agent row on every request) vs the bare hello-world',
  needs: ['service', 'baseline'],
  async run(ctx) {
    const cookie = await signIn(ctx.serviceUrl, { chatId: '300000000000000001', clearance: 3 });
    const c = await ctx.compare(
      { url: `${ctx.serviceUrl}/auth/me`, headers: { cookie }, label: 'service GET /auth/me' },
      { url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' },
    );
    ctx.log(formatComparison(c));
    return [
      ctx.line('req/s ratio service/bare', c.ratio, 'ratio', { text: `>= ${GOAL}`, ok: c.ratio >= GOAL }),
      ctx.line('service req/s', c.a.reqPerSec, 'req/s'),
      ctx.line('CPU used by other processes meanwhile', (c.a.otherCores + c.b.otherCores) / 2, 'cores'),
      ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
      ctx.line('service p50 latency', c.a.latencyMs.p50, 'ms'),
      ctx.line('service p99 latency', c.a.latencyMs.p99, 'ms'),
    ];
  },
};
