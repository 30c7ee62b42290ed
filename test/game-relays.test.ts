// The relays behind the game lookup (issue 10), against stand-in relays on real ports: failover,
// the circuit breaker, the upstream's rate limits, the server key, malformed answers, coalescing.
import { afterEach, describe, expect, it } from 'vitest';
import { GameServer } from '../src/game/players.js';
import { AppError } from '../src/platform/errors.js';
import { silentLog } from './helpers/app.js';
import { player, refusedUrl, startRelay, type StandInRelay } from '../bench/lib/game-relay.js';

const relays: StandInRelay[] = [];
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
});
async function relay(reply?: StandInRelay['reply']) {
  const r = await startRelay(reply);
  relays.push(r);
  return r;
}

function server(urls: string[], options: Partial<ConstructorParameters<typeof GameServer>[0]> = {}) {
  return new GameServer({ relayUrls: urls, serverKey: 'test-server-key', timeoutMs: 300, ttlMs: 1, log: silentLog, ...options });
}

async function failure(promise: Promise<unknown>): Promise<{ status: number; message: string; code?: string; retryAfter?: number }> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { status: err.statusCode, message: err.message, code: err.code, retryAfter: err.retryAfterSeconds };
  }
  throw new Error('expected a failure');
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('game relays', () => {
  it('sends the server key and answers the upstream list', async () => {
    const a = await relay({ body: [player('Alice', 11)] });
    expect((await server([a.url]).players()).entries).toEqual([player('Alice', 11)]);
    expect(a.keys).toEqual(['test-server-key']);
  });

  it('fails over to the next relay when one refuses, times out or answers 5xx', async () => {
    const good = await relay({ body: [player('Bob', 22)] });
    const hanging = await relay({ hang: true });
    const broken = await relay({ status: 500, body: { message: 'oops' } });
    const game = server([await refusedUrl(), hanging.url, broken.url, good.url]);
    const started = Date.now();
    expect((await game.players()).entries).toEqual([player('Bob', 22)]);
    // Only the hanging relay cost its timeout.
    expect(Date.now() - started).toBeLessThan(2000);
    expect([hanging.calls, broken.calls, good.calls]).toEqual([1, 1, 1]);
  });

  it('fails with 502 naming every relay’s failure when none answers', async () => {
    const broken = await relay({ status: 503 });
    const hanging = await relay({ hang: true });
    const refused = await refusedUrl();
    const err = await failure(server([refused, hanging.url, broken.url]).players());
    expect(err.status).toBe(502);
    expect(err.code).toBe('GAME_RELAYS_FAILED');
    expect(err.message).toMatch(/^Game server lookup failed: relay 1 \(127\.0\.0\.1:\d+\) refused the connection; relay 2 \(127\.0\.0\.1:\d+\) did not answer within 300 ms; relay 3 \(127\.0\.0\.1:\d+\) answered 503$/);
  });

  it('opens a relay’s breaker after consecutive failures, lets one probe through after the cool-down, and closes on success', async () => {
    const flaky = await relay({ status: 500 });
    const backup = await relay({ body: [] });
    const game = server([flaky.url, backup.url], { breaker: { failureThreshold: 3, coolDownMs: 500 } });
    for (let i = 0; i < 3; i++) {
      await game.players();
      await tick(2); // past the 1 ms list lifetime
    }
    expect(flaky.calls).toBe(3);
    await game.players();
    expect(flaky.calls).toBe(3); // open: skipped without a call
    await tick(520);
    flaky.reply = { body: [player('Back', 1)], delayMs: 50 };
    // Half-open: of three concurrent lookups only one call probes the relay (the others share it).
    const [first] = await Promise.all([game.players(), game.players(), game.players()]);
    expect(first.entries).toEqual([player('Back', 1)]);
    expect(flaky.calls).toBe(4);
    await tick(2);
    await game.players();
    expect(flaky.calls).toBe(5); // closed again
  });

  it('answers 429 with the upstream’s Retry-After header and does not call the relay again before then', async () => {
    const a = await relay({ status: 429, headers: { 'retry-after': '7' }, body: { message: 'You are being rate limited!', retry_after: 3, bucket: 'global' } });
    const game = server([a.url]);
    const err = await failure(game.players());
    expect(err).toMatchObject({ status: 429, code: 'GAME_RATE_LIMITED', retryAfter: 7 });
    await tick(2);
    const again = await failure(game.players());
    expect(again.status).toBe(429);
    expect(again.retryAfter).toBeGreaterThanOrEqual(6);
    expect(a.calls).toBe(1);
  });

  it('takes retry_after from the body when the header is absent, and uses the next relay meanwhile', async () => {
    const limited = await relay({ status: 429, body: { message: 'You are being rate limited!', retry_after: 12, bucket: 'global' } });
    const game = server([limited.url]);
    expect(await failure(game.players())).toMatchObject({ status: 429, retryAfter: 12 });
    const backup = await relay({ body: [player('Cy', 3)] });
    const both = server([limited.url, backup.url]);
    expect((await both.players()).entries).toEqual([player('Cy', 3)]);
    await tick(2);
    expect((await both.players()).entries).toEqual([player('Cy', 3)]);
    expect(limited.calls).toBe(2); // once per GameServer: the second lookup skipped it
  });

  it('honours X-RateLimit-Remaining: 0 until X-RateLimit-Reset before any 429', async () => {
    const reset = Math.ceil(Date.now() / 1000) + 5;
    const a = await relay({ body: [player('Dee', 4)], headers: { 'x-ratelimit-bucket': 'global', 'x-ratelimit-limit': '35', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) } });
    const game = server([a.url]);
    expect((await game.players()).entries).toEqual([player('Dee', 4)]);
    await tick(2);
    const err = await failure(game.players());
    expect(err.status).toBe(429);
    expect(err.retryAfter).toBeGreaterThanOrEqual(4);
    expect(err.retryAfter).toBeLessThanOrEqual(6);
    expect(a.calls).toBe(1);
  });

  it('treats a refused server key as configuration: 503 naming it, logged once, not asked again for a while', async () => {
    const a = await relay({ status: 403, body: { code: 2002, message: 'Invalid server-key' } });
    const lines: string[] = [];
    const log = { ...silentLog, error: (_o: unknown, msg: string) => lines.push(msg), info: () => undefined, warn: () => undefined } as unknown as typeof silentLog;
    const game = server([a.url, (await relay({ body: [] })).url], { log });
    for (let i = 0; i < 3; i++) {
      const err = await failure(game.players());
      expect(err).toMatchObject({ status: 503, code: 'GAME_KEY_REFUSED' });
      expect(err.message).toBe('The game server refused the configured server key (code 2002: the server key is invalid or expired): check GAME_SERVER_KEY');
    }
    expect(a.calls).toBe(1);
    expect(lines).toEqual(['game server refused the server key: the server key is invalid or expired; check GAME_SERVER_KEY']);
  });

  it('reads an offline server (3002) and an empty list as nobody online', async () => {
    const offline = await relay({ status: 422, body: { code: 3002, message: 'Server offline' } });
    expect((await server([offline.url]).players()).entries).toEqual([]);
  });

  it('refuses malformed answers with 502: invalid JSON, a Player without a colon, a huge body', async () => {
    const cases: [StandInRelay['reply'], string][] = [
      [{ raw: '{not json' }, 'answered a body that is not JSON'],
      [{ body: { players: [] } }, 'answered an invalid player list: not an array'],
      [{ body: [{ Player: 'NoColon' }] }, 'answered an invalid player list: entry 0 has no Player of the form "Name:UserId"'],
      [{ raw: `[${'"x",'.repeat(300_000)}"x"]` }, 'answered a body larger than 1048576 bytes'],
    ];
    for (const [reply, message] of cases) {
      const a = await relay(reply);
      const err = await failure(server([a.url]).players());
      expect(err.status, message).toBe(502);
      expect(err.message, message).toMatch(new RegExp(`relay 1 \\(127\\.0\\.0\\.1:\\d+\\) ${message.replace(/[()[\]"]/g, '\\$&')}$`));
    }
  });

  it('coalesces: 200 concurrent lookups cost one upstream call, and the list serves lookups for its lifetime', async () => {
    const a = await relay({ body: [player('Eve', 5)], delayMs: 30 });
    const game = server([a.url], { ttlMs: 500 });
    const lists = await Promise.all(Array.from({ length: 200 }, () => game.players()));
    expect(lists.every((list) => list.entries[0]?.Player === 'Eve:5')).toBe(true);
    expect(a.calls).toBe(1);
    await game.players();
    expect(a.calls).toBe(1);
    await tick(520);
    await game.players();
    expect(a.calls).toBe(2);
  });
});
