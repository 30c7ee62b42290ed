// The sign-in attempt between /auth/chat/login and /auth/chat/callback, held by the browser: a
// cookie carrying the state, the environment, return_to, popup and an expiry, signed with the
// environment's own key (signing_keys). Nothing is written until a sign-in succeeds, so callers
// without credentials cannot make the service hold state by asking to sign in.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EnvironmentName } from '../config.js';
import { hashToken } from '../platform/auth/sessions.js';

/** How long a browser has to come back from the chat platform. */
export const OAUTH_STATE_TTL_SECONDS = 10 * 60;

export interface OAuthAttempt {
  returnTo: string | null;
  popup: boolean;
}

interface Sealed {
  /** The environment that minted it (the signing key is that environment's too). */
  env: EnvironmentName;
  /** The state sent to the platform, `<environment>.<32 random bytes>`. */
  state: string;
  return_to: string | null;
  popup: boolean;
  /** Expiry, Unix seconds. */
  exp: number;
}

const mac = (key: Buffer, env: string, body: string) => createHmac('sha256', key).update(`cms-oauth-state.${env}.${body}`).digest();

/** The cookie value: base64url(JSON) and its HMAC-SHA256, joined by a dot. */
export function sealState(key: Buffer, env: EnvironmentName, state: string, attempt: OAuthAttempt, now = Date.now()): string {
  const sealed: Sealed = { env, state, return_to: attempt.returnTo, popup: attempt.popup, exp: Math.floor(now / 1000) + OAUTH_STATE_TTL_SECONDS };
  const body = Buffer.from(JSON.stringify(sealed)).toString('base64url');
  return `${body}.${mac(key, env, body).toString('base64url')}`;
}

export type OpenedState = { attempt: OAuthAttempt } | { refused: string };

/**
 * The attempt behind `state` when `cookie` is this environment's, unaltered, unexpired and was
 * minted for that very state; otherwise why not. Comparisons are of fixed-length digests in
 * constant time, so neither the signature nor the state leaks through timing.
 */
export function openState(key: Buffer, env: EnvironmentName, cookie: string, state: string, now = Date.now()): OpenedState {
  const dot = cookie.lastIndexOf('.');
  const body = cookie.slice(0, Math.max(0, dot));
  const given = Buffer.from(cookie.slice(dot + 1), 'base64url');
  const expected = mac(key, env, body);
  if (dot < 0 || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { refused: 'state cookie not signed by this environment' };
  }
  const sealed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Sealed;
  if (!timingSafeEqual(Buffer.from(hashToken(state), 'hex'), Buffer.from(hashToken(sealed.state), 'hex'))) {
    return { refused: 'state does not match this browser' };
  }
  if (sealed.env !== env) return { refused: 'state minted by another environment' };
  if (sealed.exp * 1000 <= now) return { refused: 'the attempt expired' };
  return { attempt: { returnTo: sealed.return_to, popup: sealed.popup } };
}
