// Single routes through the shared service against the bare Fastify hello-world (bench/lib/versus-bare.ts).
import { signIn } from '../lib/sign-in.js';
import { bareLines, compareWithBare, versusBare } from '../lib/versus-bare.js';

export const root = versusBare('root', 'GET / through the service vs the bare Fastify hello-world', async (ctx) => {
  const c = await compareWithBare(ctx, { url: `${ctx.serviceUrl}/`, label: 'service GET /' });
  return bareLines(ctx, c, { text: '>= 0.80', ok: c.ratio >= 0.8 }, ['service p50', 'service p99', 'bare p99']);
});

export const generateCase = versusBare('generate-case', 'GET /generate/case with the production key (allocates a case id) vs the bare hello-world', async (ctx) => {
  const c = await compareWithBare(ctx, { url: `${ctx.serviceUrl}/generate/case`, headers: { authorization: ctx.apiKey }, label: 'service GET /generate/case' });
  return bareLines(ctx, c, undefined, ['service p50', 'service p95', 'service p99']);
});

/** Issue goal: a session-authenticated GET /auth/me at least a quarter of bare Fastify. */
const AUTH_ME_GOAL = 0.25;

export const authMe = versusBare('auth-me', 'session-authenticated GET /auth/me (live agent row on every request) vs the bare hello-world', async (ctx) => {
  const cookie = await signIn(ctx.serviceUrl, { chatId: '300000000000000001', clearance: 3 });
  const c = await compareWithBare(ctx, { url: `${ctx.serviceUrl}/auth/me`, headers: { cookie }, label: 'service GET /auth/me' });
  return bareLines(ctx, c, { text: `>= ${AUTH_ME_GOAL}`, ok: c.ratio >= AUTH_ME_GOAL }, ['service p50', 'service p99']);
});

const QUEUE_POLL_GOAL = 0.4;

/** The bot polls its queues constantly: an empty-queue pickup (stale sweep, claim attempt, 204). */
export const queuePoll = versusBare('queue-poll', 'GET /actions/next on an empty queue (204) vs the bare Fastify hello-world', async (ctx) => {
  const c = await compareWithBare(ctx, { url: `${ctx.serviceUrl}/actions/next`, headers: { authorization: ctx.apiKey }, label: 'service GET /actions/next (204)' }, '204');
  return [
    ctx.line('req/s ratio empty poll/bare', c.ratio, 'ratio', { text: `>= ${QUEUE_POLL_GOAL}`, ok: c.ratio >= QUEUE_POLL_GOAL }),
    ctx.line('empty polls/s', c.a.reqPerSec, 'req/s'),
    ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
    ctx.line('empty poll p99 latency', c.a.latencyMs.p99, 'ms'),
  ];
});
