// GET /game/player/<game_user_id> (spec: Game server lookup; issue 10), through the app against a
// stand-in relay on a real port.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { player, startRelay, type StandInRelay } from '../bench/lib/game-relay.js';
import { signedIn } from './helpers/identity.js';

const key = { host: 'localhost', authorization: PRODUCTION_KEY };
const LOCATION = { LocationX: 1052.3, LocationZ: -322.8, PostalCode: '218', StreetName: 'Elm Street', BuildingNumber: '1406' };

describe('GET /game/player/<id>', () => {
  let t: TestApp;
  let relay: StandInRelay;
  const lookup = (id: string, headers: Record<string, string> = key) => t.app.inject({ method: 'GET', url: `/game/player/${id}`, headers });
  /** The relay's next answer, once the list fetched before has outlived its 1 ms (else it answers). */
  const relayAnswers = async (reply: StandInRelay['reply']) => {
    relay.reply = reply;
    await new Promise((r) => setTimeout(r, 2));
  };

  beforeAll(async () => {
    relay = await startRelay();
    // A list lives 1 ms here, so each lookup sees the relay's current answer.
    t = await createTestApp({ env: { GAME_RELAY_URLS: relay.url, GAME_SERVER_KEY: 'srv-key', GAME_PLAYERS_TTL_SECONDS: '0.001', GAME_RELAY_TIMEOUT_SECONDS: '0.5' } });
  });
  afterAll(async () => {
    await t.close();
    await relay.close();
  });

  it('answers a player in the server with their name, team, wanted stars, location and the raw entry', async () => {
    const entry = player('NightOwl_88', 1843209911, { Permission: 'Server Moderator', Team: 'Police', Callsign: 'C-12', WantedStars: 2, Location: LOCATION });
    await relayAnswers({ body: [player('Someone', 5), entry] });
    const res = await lookup('1843209911');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      success: true, online: true, gameUserId: 1843209911, username: 'NightOwl_88', permission: 'Server Moderator', team: 'Police', wantedStars: 2, location: LOCATION, raw: entry,
    });
    expect(relay.keys.at(-1)).toBe('srv-key');
  });

  it('defaults wantedStars to 0 and location to null when the upstream omits them', async () => {
    await relayAnswers({ body: [player('quietstorm', 77)] });
    expect((await lookup('77')).json()).toMatchObject({ success: true, online: true, username: 'quietstorm', wantedStars: 0, location: null, team: 'Civilian' });
  });

  it('answers not online, every other member null, for a player not in the server, an empty list or an offline server', async () => {
    const absent = { success: true, online: false, gameUserId: null, username: null, permission: null, team: null, wantedStars: null, location: null, raw: null };
    for (const reply of [{ body: [player('Other', 41)] }, { body: [] }, { status: 422, body: { code: 3002, message: 'Server offline' } }]) {
      await relayAnswers(reply);
      const res = await lookup('42');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(absent);
    }
  });

  it('refuses every id that is not a positive integer up to 2^53 - 1 with 400', async () => {
    for (const id of ['0', '-1', '1.5', 'abc', '9007199254740992', '99999999999999999999', '01', '1e3']) {
      const res = await lookup(id);
      expect(res.statusCode, id).toBe(400);
      expect(res.json().success, id).toBe(false);
    }
    expect((await lookup('9007199254740991')).statusCode).toBe(200);
  });

  it('coalesces: 200 concurrent lookups for different players cost one upstream call', async () => {
    await relayAnswers({ body: Array.from({ length: 100 }, (_, i) => player(`P${i}`, 500 + i)), delayMs: 50 });
    const before = relay.calls;
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => lookup(String(500 + i))));
    expect(relay.calls - before).toBe(1);
    expect(answers.map((r) => r.statusCode)).toEqual(Array(200).fill(200));
    expect(answers.filter((r) => r.json().online)).toHaveLength(100);
    expect(answers[199]!.json()).toMatchObject({ online: false, gameUserId: null });
  });

  it('answers an upstream 429 with 429 and its Retry-After (this relay stays out for the rest of the file)', async () => {
    await relayAnswers({ status: 429, body: { message: 'You are being rate limited!', retry_after: 9, bucket: 'global' } });
    const limited = await lookup('5');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBe('9');
    expect(limited.json()).toEqual({ success: false, error: 'The game server is rate limiting this service: retry after 9 s', code: 'GAME_RATE_LIMITED' });
  });

  it('is for the API key only: a session or no credential 401', async () => {
    const person = await signedIn(t, { rank: 'Director', clearance: 5 });
    const session = await lookup('5', person.headers);
    expect(session.statusCode).toBe(401);
    expect(session.json()).toMatchObject({ success: false, code: 'KEY_REQUIRED' });
    expect((await lookup('5', { host: 'localhost' })).statusCode).toBe(401);
  });
});

describe('GET /game/player/<id> with other relays', () => {
  it('answers 503 when the relays or the key are not configured', async () => {
    const t = await createTestApp({ env: { GAME_SERVER_KEY: 'k' } });
    try {
      const res = await t.app.inject({ method: 'GET', url: '/game/player/5', headers: key });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ success: false, error: 'The game server lookup (GAME_RELAY_URLS, GAME_SERVER_KEY) is not configured', code: 'NOT_CONFIGURED' });
    } finally {
      await t.close();
    }
  });

  it('a refused key is 503 and a malformed answer 502, never a stack', async () => {
    // One relay and one app for both: the malformed answer first, as a refused key is remembered
    // (the relay is not asked again for 30 s), while one failure leaves the relay in use.
    const relay = await startRelay({ raw: '<html>Bad gateway</html>' });
    const t = await createTestApp({ env: { GAME_RELAY_URLS: relay.url, GAME_SERVER_KEY: 'k' } });
    try {
      const malformed = await t.app.inject({ method: 'GET', url: '/game/player/5', headers: key });
      expect(malformed.statusCode).toBe(502);
      expect(malformed.json().error).toMatch(/^Game server lookup failed: relay 1 \(127\.0\.0\.1:\d+\) answered a body that is not JSON$/);
      relay.reply = { status: 403, body: { code: 2004, message: 'Banned' } };
      const refused = await t.app.inject({ method: 'GET', url: '/game/player/5', headers: key });
      expect(refused.statusCode).toBe(503);
      expect(refused.json()).toEqual({
        success: false, code: 'GAME_KEY_REFUSED',
        error: 'The game server refused the configured server key (code 2004: the server key is banned from the API): check GAME_SERVER_KEY',
      });
    } finally {
      await Promise.all([t.close(), relay.close()]);
    }
  });
});
