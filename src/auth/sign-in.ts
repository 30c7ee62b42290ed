// What every way of signing in shares (the chat platform's OAuth callback, the demo's local
// sign-in): the cookie's settings, where the browser may be sent afterwards, and the start of a
// fresh session. One copy, so a local sign-in session is an OAuth session in every respect.
import type { RateLimitOptions } from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { createSession, destroySession, SESSION_COOKIE, SESSION_TTL_SECONDS } from '../platform/auth/sessions.js';
import { errors } from '../platform/errors.js';

/**
 * Every sign-in route's limit (config.rateLimit): SIGNIN_RATE_LIMIT_PER_MINUTE requests per client
 * address (request.ip, so TRUST_PROXY decides it) per minute, each route counting its own. The
 * counters are this instance's, in memory (app.ts registers @fastify/rate-limit).
 */
export const signInRateLimit = (config: Config): RateLimitOptions => ({ max: config.signinRateLimitPerMinute, timeWindow: 60_000 });

/** HttpOnly, SameSite=Lax, Secure over https (TRUST_PROXY decides the protocol behind a proxy). */
export const cookieBase = (request: FastifyRequest) => ({ httpOnly: true, sameSite: 'lax', secure: request.protocol === 'https' }) as const;

/**
 * Session fixation: whatever session this browser carried dies before the new one is issued, in
 * the same transaction as the new row. With `oauthStateHash`, a state that already started a
 * session throws StateAlreadyUsed and changes nothing.
 */
export async function startSession(request: FastifyRequest, reply: FastifyReply, chatId: string, oauthStateHash?: string): Promise<void> {
  const { name, db, sessions } = request.environment;
  const previous = request.cookies[SESSION_COOKIE];
  const { token, replaced } = await db.transaction(async (tx) => {
    const replaced = previous ? await destroySession(tx, previous) : undefined;
    return { ...(await createSession(tx, name, chatId, oauthStateHash)), replaced };
  });
  // Other instances hear the deletion through the database; this one forgets it right away.
  if (replaced) sessions.invalidate(replaced);
  reply.setCookie(SESSION_COOKIE, token, { ...cookieBase(request), path: '/', maxAge: SESSION_TTL_SECONDS });
}

/** return_to must be an http(s) URL on an allowed dashboard or training origin. */
export function allowedReturnTo(raw: string, origins: ReadonlySet<string>, field = 'querystring.return_to'): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const ok = url !== undefined && (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password && origins.has(url.origin);
  if (!ok || url === undefined) throw errors.validation(`${field} must be a URL on an allowed dashboard or training origin`);
  return url.toString();
}
