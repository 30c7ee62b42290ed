// The current player list of the game server, through the relays (issue 10): relays in order with
// failover; each relay's breaker and rate limit decide whether it is tried at all; one upstream call
// serves every lookup that arrives while it is in flight and, for `ttlMs` after it, every lookup
// (a burst of 200 lookups costs one call). A rejected server key is a configuration problem: it is
// answered 503 from memory for a while rather than hammering the upstream, which blocks clients
// that keep sending bad requests, and it is logged once per change, not per request.
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../platform/errors.js';
import type { BreakerOptions } from './breaker.js';
import { Relay, type RelayAnswer, type UpstreamPlayer } from './relay.js';

export interface GameServerOptions {
  relayUrls: readonly string[];
  serverKey: string;
  /** Per-attempt timeout of one relay call (GAME_RELAY_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** How long a fetched list answers lookups (GAME_PLAYERS_TTL_SECONDS). */
  ttlMs: number;
  breaker?: BreakerOptions;
  maxBodyBytes?: number;
  log: FastifyBaseLogger;
}

/** Consecutive failures that open a relay's breaker, and how long it stays open before a probe. */
export const BREAKER_FAILURE_THRESHOLD = 3;
export const BREAKER_COOL_DOWN_MS = 10_000;
/** The largest player list body accepted (a full server is a few tens of KB). */
export const MAX_PLAYER_LIST_BYTES = 1024 * 1024;
/** A rejected server key is answered from memory this long before the upstream is asked again. */
export const KEY_RECHECK_MS = 30_000;

// Each is logged where it arises (a relay failure once per upstream call, the key once per change).
const gameError = {
  rateLimited: (retryAfterSeconds: number) =>
    new AppError(429, `The game server is rate limiting this service: retry after ${retryAfterSeconds} s`, 'GAME_RATE_LIMITED', { retryAfterSeconds }),
  keyRefused: (code: number, message: string) =>
    new AppError(503, `The game server refused the configured server key (code ${code}: ${message}): check GAME_SERVER_KEY`, 'GAME_KEY_REFUSED', { logged: true }),
  allFailed: (failures: string[]) => new AppError(502, `Game server lookup failed: ${failures.join('; ')}`, 'GAME_RELAYS_FAILED', { logged: true }),
};

/** One fetched player list, indexed by game user id once for every lookup it answers. */
export class PlayerList {
  private readonly byId = new Map<number, { username: string; entry: UpstreamPlayer }>();

  constructor(readonly entries: UpstreamPlayer[]) {
    for (const entry of entries) {
      // "Name:UserId" (checked by the relay): split at the last colon.
      const at = entry.Player.lastIndexOf(':');
      this.byId.set(Number(entry.Player.slice(at + 1)), { username: entry.Player.slice(0, at), entry });
    }
  }

  find(gameUserId: number): { username: string; entry: UpstreamPlayer } | undefined {
    return this.byId.get(gameUserId);
  }
}

export class GameServer {
  private readonly relays: Relay[];
  private inFlight: Promise<PlayerList> | undefined;
  private cached: { list: PlayerList; until: number } | undefined;
  private keyProblem: { code: number; message: string; until: number } | undefined;
  /** The last key state logged, so a change is logged once. */
  private loggedKeyCode: number | undefined;

  constructor(private readonly options: GameServerOptions) {
    this.relays = options.relayUrls.map(
      (url, index) =>
        new Relay(url, index, {
          serverKey: options.serverKey,
          timeoutMs: options.timeoutMs,
          maxBodyBytes: options.maxBodyBytes ?? MAX_PLAYER_LIST_BYTES,
          breaker: options.breaker ?? { failureThreshold: BREAKER_FAILURE_THRESHOLD, coolDownMs: BREAKER_COOL_DOWN_MS },
        }),
    );
  }

  /** The current player list: from memory while fresh, else one shared upstream call. */
  async players(): Promise<PlayerList> {
    const now = Date.now();
    if (this.cached && this.cached.until > now) return this.cached.list;
    if (this.keyProblem && this.keyProblem.until > now) throw gameError.keyRefused(this.keyProblem.code, this.keyProblem.message);
    this.inFlight ??= this.fetchThroughRelays().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetchThroughRelays(): Promise<PlayerList> {
    const failures: string[] = [];
    let limitedUntil = Infinity;
    for (const relay of this.relays) {
      const until = relay.rateLimitedUntil();
      if (until) {
        limitedUntil = Math.min(limitedUntil, until);
        failures.push(`${relay.name} is rate limited for ${secondsUntil(until)} s`);
        continue;
      }
      if (!relay.breaker.tryAcquire()) {
        failures.push(`${relay.name} is skipped: its circuit breaker is open after repeated failures`);
        continue;
      }
      const answer: RelayAnswer = await relay.fetchPlayers();
      switch (answer.kind) {
        case 'players':
          this.noteKey(undefined);
          const list = new PlayerList(answer.players);
          this.cached = { list, until: Date.now() + this.options.ttlMs };
          return list;
        case 'key_refused':
          this.noteKey(answer);
          throw gameError.keyRefused(answer.code, answer.message);
        case 'rate_limited':
          limitedUntil = Math.min(limitedUntil, answer.until);
          failures.push(`${relay.name} is rate limited for ${secondsUntil(answer.until)} s`);
          break;
        case 'upstream_error':
        case 'failed':
          failures.push(`${relay.name} ${answer.message}`);
          break;
      }
    }
    this.options.log.warn({ failures }, 'game server lookup: no relay answered');
    if (limitedUntil !== Infinity) throw gameError.rateLimited(secondsUntil(limitedUntil));
    throw gameError.allFailed(failures);
  }

  /** Remembers a refused key for a while, and logs each change of the key's state once. */
  private noteKey(refusal: { code: number; message: string } | undefined): void {
    this.keyProblem = refusal && { ...refusal, until: Date.now() + KEY_RECHECK_MS };
    const code = refusal?.code;
    if (code === this.loggedKeyCode) return;
    this.loggedKeyCode = code;
    if (refusal) this.options.log.error({ code: refusal.code }, `game server refused the server key: ${refusal.message}; check GAME_SERVER_KEY`);
    else this.options.log.info('game server accepts the server key again');
  }
}

const secondsUntil = (epochMs: number) => Math.max(1, Math.ceil((epochMs - Date.now()) / 1000));
