// The bot polls its queues constantly: an empty-queue `GET /actions/next` (stale sweep, claim
// attempt, 204) against the bare Fastify hello-world, in alternating rounds.
import { formatComparison } from '../lib/report.js';
import type { Scenario } from '../types.js';

const GOAL = 0.4;

export const queuePoll: Scenario = {
  name: 'queue-poll',
  description: 'GET /actions/next on an empty queue (204) vs the bare Fastify hello-world',
  needs: ['service', 'baseline'],
  async run(ctx) {
    const c = await ctx.compare(
      { url: `${ctx.serviceUrl}/actions/next`, headers: { authorization: ctx.apiKey }, label: 'service GET /actions/next (204)' },
      { url: `${ctx.baselineUrl}/`, label: 'bare hello-world GET /' },
    );
    ctx.log(formatComparison(c));
    if (Object.keys(c.a.statusCodes).some((code) => code !== '204')) throw new Error(`expected only 204, got ${JSON.stringify(c.a.statusCodes)}`);
    return [
      ctx.line('req/s ratio empty poll/bare', c.ratio, 'ratio', { text: `>= ${GOAL}`, ok: c.ratio >= GOAL }),
      ctx.line('empty polls/s', c.a.reqPerSec, 'req/s'),
      ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
      ctx.line('empty poll p99 latency', c.a.latencyMs.p99, 'ms'),
    ];
  },
};
