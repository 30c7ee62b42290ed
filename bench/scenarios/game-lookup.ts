// GET /game/player/<id> against a stand-in relay (issue 10): the bot's lookups for varied players,
// half of them in the server, at 50 connections, against the bare Fastify hello-world; how many
// upstream calls they cost (coalescing). Then with the first relay black-holed (it accepts the
// connection and never answers): the first seconds, while each refresh waits out its per-attempt
// timeout before failing over, and the seconds after its circuit breaker has opened.
import { BREAKER_COOL_DOWN_MS, BREAKER_FAILURE_THRESHOLD } from '../../src/game/players.js';
import { player, startRelay } from '../lib/game-relay.js';
import { withOwnService } from '../lib/own-service.js';
import { assertOnlyStatus, compareWithBare } from '../lib/versus-bare.js';
import type { Scenario } from '../types.js';

const GOAL_RATIO = 0.5;
const TIMEOUT_SECONDS = 1;
/** A busy server: 40 players; lookups ask for them and for as many who are not there. */
const PLAYERS = Array.from({ length: 40 }, (_, i) => player(`Player${i}`, 1_000_000 + i, { Team: i % 3 ? 'Civilian' : 'Police', WantedStars: i % 4 }));
const randomId = () => 1_000_000 + Math.floor(Math.random() * 80);
const lookupPath = () => `/game/player/${randomId()}`;

export const gameLookup: Scenario = {
  name: 'game-lookup',
  description: 'GET /game/player/<varied id> through a stand-in relay vs the bare hello-world; then the first relay black-holed',
  needs: ['baseline'],
  async run(ctx) {
    const relay = await startRelay({ body: PLAYERS, headers: { 'x-ratelimit-bucket': 'global', 'x-ratelimit-limit': '1000000', 'x-ratelimit-remaining': '999999' } });
    const blackHole = await startRelay({ hang: true });
    const env = (urls: string[]) => ({ GAME_RELAY_URLS: urls.join(','), GAME_SERVER_KEY: 'bench-server-key', GAME_RELAY_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS) });
    const headers = { authorization: ctx.apiKey };
    try {
      const steady = await withOwnService(ctx, async (service) => {
        const callsBefore = relay.calls;
        const c = await compareWithBare(ctx, { url: `${service.url}/game/player/1`, path: lookupPath, headers, label: 'service GET /game/player/<id>' }, '200');
        return { c, upstream: relay.calls - callsBefore, lookups: c.a.total };
      }, { env: env([relay.url]) });

      const failover = await withOwnService(ctx, async (service) => {
        const first = await ctx.measure({ url: `${service.url}/game/player/1`, path: lookupPath, headers, duration: 3, label: 'first 3 s, relay 1 black-holed' });
        assertOnlyStatus(first.statusCodes, '200');
        // Until the breaker has opened (a failed attempt per refresh), then well inside its cool-down.
        const deadline = Date.now() + 30_000;
        while (blackHole.calls < BREAKER_FAILURE_THRESHOLD && Date.now() < deadline) {
          await fetch(`${service.url}/game/player/1`, { headers });
          await new Promise((r) => setTimeout(r, 200));
        }
        await new Promise((r) => setTimeout(r, TIMEOUT_SECONDS * 1000 + 200));
        const opened = await ctx.measure({ url: `${service.url}/game/player/1`, path: lookupPath, headers, duration: Math.min(5, BREAKER_COOL_DOWN_MS / 1000 - 4), label: 'breaker open' });
        assertOnlyStatus(opened.statusCodes, '200');
        return { first, opened, blackHoleCalls: blackHole.calls };
      }, { env: env([blackHole.url, relay.url]) });

      const { c, upstream, lookups } = steady;
      const { first, opened } = failover;
      const twiceTimeout = 2 * TIMEOUT_SECONDS * 1000;
      return [
        ctx.line('req/s ratio lookup/bare', c.ratio, 'ratio', { text: `>= ${GOAL_RATIO}`, ok: c.ratio >= GOAL_RATIO }),
        ctx.line('lookups/s', c.a.reqPerSec, 'req/s'),
        ctx.line('bare req/s', c.b.reqPerSec, 'req/s'),
        ctx.line('lookup p50 latency', c.a.latencyMs.p50, 'ms'),
        ctx.line('lookup p99 latency', c.a.latencyMs.p99, 'ms'),
        ctx.line('upstream calls during the measured lookups', upstream, 'calls'),
        ctx.line('measured lookups', lookups, 'requests'),
        ctx.line('relay 1 black-holed: p99 in the first 3 s', first.latencyMs.p99, 'ms', { text: `< ${twiceTimeout} ms (2 x timeout)`, ok: first.latencyMs.p99 < twiceTimeout }),
        ctx.line('relay 1 black-holed: max latency in the first 3 s (a refresh waiting out the timeout)', first.latencyMs.max, 'ms'),
        ctx.line('relay 1 black-holed: req/s in the first 3 s', first.reqPerSec, 'req/s'),
        ctx.line('breaker open: p99', opened.latencyMs.p99, 'ms', { text: `<= 2 x steady p99 + 5 ms`, ok: opened.latencyMs.p99 <= 2 * c.a.latencyMs.p99 + 5 }),
        ctx.line('breaker open: max latency', opened.latencyMs.max, 'ms'),
        ctx.line('breaker open: req/s', opened.reqPerSec, 'req/s'),
      ];
    } finally {
      await Promise.all([relay.close(), blackHole.close()]);
    }
  },
};

