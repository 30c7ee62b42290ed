// One game relay (issue 10): it speaks the ER:LC private server API, `GET <relay>/v1/server/players`
// with the `Server-Key` header. Each call is bounded (per-attempt timeout, body size) and classified
// into what the lookup needs to decide: a player list, a rate limit with its end, the server key
// refused, the upstream game's own error, or the relay failing (its breaker counts those). The
// relay also remembers when it must not be called: its bucket is spent until its reset, or it
// answered 429 until its retry-after.
import { CircuitBreaker, type BreakerOptions } from './breaker.js';

/** One entry of the upstream player list, as the API documents it. */
export interface UpstreamPlayer {
  Player: string;
  Permission?: unknown;
  Callsign?: unknown;
  Team?: unknown;
  WantedStars?: unknown;
  Location?: unknown;
  [field: string]: unknown;
}

export type RelayAnswer =
  | { kind: 'players'; players: UpstreamPlayer[] }
  | { kind: 'rate_limited'; until: number }
  | { kind: 'key_refused'; code: number; message: string }
  | { kind: 'upstream_error'; code: number | undefined; message: string }
  | { kind: 'failed'; message: string };

export interface RelayOptions {
  serverKey: string;
  timeoutMs: number;
  maxBodyBytes: number;
  breaker: BreakerOptions;
}

/** ER:LC error codes (apidocs.erlc.gg/error-codes) that this lookup treats specially. */
const KEY_CODES: Record<number, string> = {
  2000: 'no server key was sent',
  2001: 'the server key is malformed',
  2002: 'the server key is invalid or expired',
  2003: 'the global API key is invalid',
  2004: 'the server key is banned from the API',
};
const SERVER_OFFLINE = 3002;
const RATE_LIMITED = 4001;
const UPSTREAM_CODES: Record<number, string> = {
  0: 'unknown upstream error',
  1001: 'error communicating with Roblox or the in-game server',
  1002: 'internal upstream error',
  9998: 'the resource is restricted',
  9999: 'the in-game module is out of date',
};

/** A 429 with neither a Retry-After header nor a retry_after body: wait this long. */
const DEFAULT_RETRY_AFTER_MS = 1000;

export class Relay {
  readonly breaker: CircuitBreaker;
  /** Not to be called before this time (epoch ms): a spent bucket or a 429. */
  private limitedUntil = 0;

  constructor(
    readonly url: string,
    readonly index: number,
    private readonly options: RelayOptions,
  ) {
    this.breaker = new CircuitBreaker(options.breaker);
  }

  get name(): string {
    return `relay ${this.index + 1} (${new URL(this.url).host})`;
  }

  /** Epoch ms until which the relay's rate limit forbids calling it, or 0. */
  rateLimitedUntil(now = Date.now()): number {
    return this.limitedUntil > now ? this.limitedUntil : 0;
  }

  /** One bounded call. The caller has acquired the breaker; this reports to it. */
  async fetchPlayers(): Promise<RelayAnswer> {
    const answer = await this.call();
    if (answer.kind === 'failed') this.breaker.failure();
    else this.breaker.success();
    if (answer.kind === 'rate_limited') this.limitedUntil = Math.max(this.limitedUntil, answer.until);
    return answer;
  }

  private async call(): Promise<RelayAnswer> {
    const target = new URL('v1/server/players', this.url.endsWith('/') ? this.url : `${this.url}/`);
    let response: Response;
    let text: string;
    try {
      response = await fetch(target, {
        headers: { 'Server-Key': this.options.serverKey, accept: 'application/json' },
        signal: AbortSignal.timeout(this.options.timeoutMs),
        redirect: 'error',
      });
      this.trackBucket(response.headers);
      text = await readBounded(response, this.options.maxBodyBytes);
    } catch (err) {
      return { kind: 'failed', message: describeFailure(err, this.options.timeoutMs) };
    }
    const body = parseJson(text);
    if (response.status === 429) return { kind: 'rate_limited', until: retryAt(response.headers, body) };
    const code = typeof (body as { code?: unknown } | undefined)?.code === 'number' ? (body as { code: number }).code : undefined;
    if (code !== undefined && code in KEY_CODES) return { kind: 'key_refused', code, message: KEY_CODES[code]! };
    if (code === SERVER_OFFLINE) return { kind: 'players', players: [] };
    if (code === RATE_LIMITED) return { kind: 'rate_limited', until: retryAt(response.headers, body) };
    if (response.status >= 500) return { kind: 'failed', message: `answered ${response.status}${code === undefined ? '' : ` (code ${code})`}` };
    if (!response.ok || code !== undefined) {
      const known = code === undefined ? undefined : UPSTREAM_CODES[code];
      return { kind: 'upstream_error', code, message: `answered ${response.status}${code === undefined ? '' : ` with code ${code}`}${known ? `: ${known}` : ''}` };
    }
    if (body === undefined) return { kind: 'failed', message: 'answered a body that is not JSON' };
    const problem = playerListProblem(body);
    if (problem) return { kind: 'failed', message: `answered an invalid player list: ${problem}` };
    return { kind: 'players', players: body as UpstreamPlayer[] };
  }

  /** Every answer says how much of its bucket is left; a spent bucket is not called before its reset. */
  private trackBucket(headers: Headers): void {
    const remaining = Number(headers.get('x-ratelimit-remaining'));
    const reset = Number(headers.get('x-ratelimit-reset'));
    if (headers.get('x-ratelimit-remaining') !== null && remaining <= 0 && Number.isFinite(reset)) {
      this.limitedUntil = Math.max(this.limitedUntil, reset * 1000);
    }
  }
}

/** The body as text, refusing (and abandoning) one larger than `limit` bytes. */
async function readBounded(response: Response, limit: number): Promise<string> {
  const announced = Number(response.headers.get('content-length'));
  if (Number.isFinite(announced) && announced > limit) {
    await response.body?.cancel();
    throw new BodyTooLarge(limit);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new BodyTooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

class BodyTooLarge extends Error {
  constructor(limit: number) {
    super(`answered a body larger than ${limit} bytes`);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Retry-After (seconds) from the header, else the body's retry_after, else a second. */
function retryAt(headers: Headers, body: unknown): number {
  const header = Number(headers.get('retry-after'));
  const fromBody = Number((body as { retry_after?: unknown } | undefined)?.retry_after);
  const seconds = headers.get('retry-after') !== null && Number.isFinite(header) && header >= 0 ? header : Number.isFinite(fromBody) && fromBody >= 0 ? fromBody : undefined;
  return Date.now() + (seconds === undefined ? DEFAULT_RETRY_AFTER_MS : seconds * 1000);
}

function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof BodyTooLarge) return err.message;
  const e = err as { name?: string; cause?: { code?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `did not answer within ${timeoutMs} ms`;
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED') return 'refused the connection';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'closed the connection';
  return `could not be reached (${code ?? e.name ?? 'network error'})`;
}

/** What is wrong with a player list, or undefined when it is one. */
function playerListProblem(body: unknown): string | undefined {
  if (!Array.isArray(body)) return 'not an array';
  for (const [i, entry] of body.entries()) {
    if (typeof entry !== 'object' || entry === null) return `entry ${i} is not an object`;
    const player = (entry as { Player?: unknown }).Player;
    if (typeof player !== 'string' || !/^.+:[0-9]+$/.test(player)) return `entry ${i} has no Player of the form "Name:UserId"`;
  }
  return undefined;
}
