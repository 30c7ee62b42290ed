// The chat platform (Discord) as the callback needs it: exchange the authorization code for a
// token (through the proxy when configured), then read the user behind it. Both calls share one
// bounded retry policy, so a slow or rate-limited platform cannot hold a sign-in open for long.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatOAuthConfig } from '../config.js';

/** Sign-in failure codes this client raises (carried in the redirect to the dashboard login). */
export type ChatFailureCode = 'chat_token_exchange_failed' | 'chat_redirect_uri_mismatch' | 'chat_user_fetch_failed';

export class ChatSignInError extends Error {
  constructor(
    readonly code: ChatFailureCode,
    detail: string,
  ) {
    super(detail);
    this.name = 'ChatSignInError';
  }
}

export interface RetryPolicy {
  maxTries: number;
  /** Each try is aborted after this long (and never outlives the total budget). */
  tryTimeoutMs: number;
  /** A longer 429 pause is not waited for: the sign-in fails instead. */
  maxPauseMs: number;
  /** The whole call, tries and pauses together. */
  totalMs: number;
  /** Pauses after a 5xx or a network error, by retry number. */
  backoffMs: readonly number[];
  sleep: (ms: number) => Promise<unknown>;
  now: () => number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxTries: 3,
  tryTimeoutMs: 5_000,
  maxPauseMs: 5_000,
  totalMs: 10_000,
  backoffMs: [250, 500],
  sleep: (ms) => sleep(ms),
  now: () => performance.now(),
};

/** A response that needs no retry (2xx, or a 4xx other than 429), with its body read. */
export interface UpstreamReply {
  status: number;
  body: unknown;
}

class GaveUp extends Error {}

/**
 * Sends until the platform gives an answer worth acting on. 429: wait Retry-After (header, else
 * the body's retry_after; seconds, maybe fractional). 5xx, timeout or network error: back off.
 * Throws GaveUp when tries, the pause limit or the total budget run out.
 */
export async function sendWithRetry(
  send: (signal: AbortSignal) => Promise<Response>,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<UpstreamReply> {
  const deadline = policy.now() + policy.totalMs;
  for (let attempt = 1; ; attempt++) {
    const remaining = deadline - policy.now();
    if (remaining <= 0) throw new GaveUp(`time budget of ${policy.totalMs} ms spent`);
    let pauseMs: number;
    let failure: string;
    try {
      const signal = AbortSignal.timeout(Math.min(policy.tryTimeoutMs, remaining));
      const response = await send(signal);
      const body = await readBody(response);
      if (response.status === 429) {
        pauseMs = retryAfterMs(response.headers.get('retry-after'), body);
        failure = `rate limited (retry after ${pauseMs} ms)`;
      } else if (response.status >= 500) {
        pauseMs = policy.backoffMs[attempt - 1] ?? policy.backoffMs.at(-1) ?? 0;
        failure = `status ${response.status}`;
      } else {
        return { status: response.status, body };
      }
    } catch (err) {
      pauseMs = policy.backoffMs[attempt - 1] ?? policy.backoffMs.at(-1) ?? 0;
      failure = (err as Error).name === 'TimeoutError' ? 'timed out' : `network error: ${(err as Error).message}`;
    }
    if (attempt >= policy.maxTries) throw new GaveUp(`${failure}; gave up after ${attempt} tries`);
    if (pauseMs > policy.maxPauseMs) throw new GaveUp(`${failure}; pause above ${policy.maxPauseMs} ms`);
    if (policy.now() + pauseMs >= deadline) throw new GaveUp(`${failure}; pause would pass the ${policy.totalMs} ms budget`);
    await policy.sleep(pauseMs);
  }
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Retry-After in seconds (fractions accepted) or as an HTTP date, else the JSON body's retry_after. */
function retryAfterMs(header: string | null, body: unknown): number {
  const value = header?.trim() ?? '';
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = value === '' ? NaN : Date.parse(value);
  if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  const fromBody = isRecord(body) ? body.retry_after : undefined;
  if (typeof fromBody === 'number' && Number.isFinite(fromBody) && fromBody >= 0) return Math.ceil(fromBody * 1000);
  return 1000; // a 429 that says nothing: a polite second, within the pause limit
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** POSTs the code, form-encoded, to the proxy when one is configured, else to the token URL. */
export async function exchangeCode(oauth: ChatOAuthConfig, code: string, policy: RetryPolicy = DEFAULT_RETRY): Promise<string> {
  const form = new URLSearchParams({
    client_id: oauth.clientId,
    client_secret: oauth.clientSecret,
    grant_type: 'authorization_code',
    code,
    redirect_uri: oauth.redirectUri,
  }).toString();
  const url = oauth.proxyUrl ?? oauth.tokenUrl;
  let reply: UpstreamReply;
  try {
    reply = await sendWithRetry(
      (signal) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: form,
          signal,
        }),
      policy,
    );
  } catch (err) {
    throw new ChatSignInError('chat_token_exchange_failed', `token exchange: ${(err as Error).message}`);
  }
  const body = isRecord(reply.body) ? reply.body : {};
  if (reply.status === 200 && typeof body.access_token === 'string' && body.access_token !== '') return body.access_token;
  const description = typeof body.error_description === 'string' ? body.error_description : '';
  // Discord refuses a redirect_uri it does not hold for the code with invalid_request
  // (discord/discord-api-docs#4076), other servers with invalid_grant: the description names it.
  if (reply.status === 400 && /redirect_uri/i.test(description)) {
    throw new ChatSignInError('chat_redirect_uri_mismatch', `token exchange refused the redirect_uri: ${description}`);
  }
  const error = typeof body.error === 'string' ? body.error : 'no access_token';
  throw new ChatSignInError('chat_token_exchange_failed', `token exchange answered ${reply.status}: ${error} ${description}`.trim());
}

/** The chat id of the token's owner: `GET <userUrl>` with the bearer token; its `id`. */
export async function fetchChatUserId(oauth: ChatOAuthConfig, accessToken: string, policy: RetryPolicy = DEFAULT_RETRY): Promise<string> {
  let reply: UpstreamReply;
  try {
    reply = await sendWithRetry(
      (signal) => fetch(oauth.userUrl, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal }),
      policy,
    );
  } catch (err) {
    throw new ChatSignInError('chat_user_fetch_failed', `user fetch: ${(err as Error).message}`);
  }
  const id = isRecord(reply.body) ? reply.body.id : undefined;
  if (reply.status !== 200 || typeof id !== 'string' || !/^\d{1,20}$/.test(id)) {
    throw new ChatSignInError('chat_user_fetch_failed', `user fetch answered ${reply.status} without a chat id`);
  }
  return id;
}

/** The fictional demo agents real identities sign in as, in DEMO_ALLOWED_CHAT_IDS order. */
export const DEMO_AGENT_CHAT_IDS = ['100000000000000001', '100000000000000002', '100000000000000003', '100000000000000004'] as const;

/** The demo agent an allowed real chat id signs in as, cycling over the four; undefined if not allowed. */
export function demoAgentFor(chatId: string, allowed: readonly string[]): string | undefined {
  const position = allowed.indexOf(chatId);
  return position < 0 ? undefined : DEMO_AGENT_CHAT_IDS[position % DEMO_AGENT_CHAT_IDS.length];
}
