// Realtime tokens (spec: Authentication 9; issue 12): an HS256 JWT with role `authenticated`,
// `sub` the agent's chat id and a lifetime of 600 s by default, signed with the environment's
// `<ENV>_REALTIME_SIGNING_SECRET`. The issuer names the environment, so a demo token never opens a
// production channel even where both environments were given the same secret.
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { EnvironmentName } from '../config.js';

export const TOKEN_LIFETIME_SECONDS = 600;
export const TOKEN_ROLE = 'authenticated';
/** The role of the built-in hub's default anon key, as in a Supabase project's anon key. */
export const ANON_ROLE = 'anon';

const issuer = (environment: EnvironmentName) => `case-management:${environment}`;
const key = (secret: string) => new TextEncoder().encode(secret);

export interface RealtimeToken {
  token: string;
  ttl: number;
  expires_at: string;
}

export async function mintToken(environment: EnvironmentName, secret: string, chatId: string, now = Date.now()): Promise<RealtimeToken> {
  const iat = Math.floor(now / 1000);
  const exp = iat + TOKEN_LIFETIME_SECONDS;
  const token = await new SignJWT({ role: TOKEN_ROLE })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(chatId)
    .setAudience(TOKEN_ROLE)
    .setIssuer(issuer(environment))
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key(secret));
  return { token, ttl: TOKEN_LIFETIME_SECONDS, expires_at: new Date(exp * 1000).toISOString() };
}

/**
 * The built-in hub's default public anon key: like a Supabase project's, a JWT signed with the
 * environment's secret whose role is `anon` (no subject, no expiry; the same on every instance, as
 * signing is deterministic). supabase-js sends it as the join's token when it has no other, and the
 * hub then refuses a private channel as unauthorised, as Supabase does, not as a malformed token.
 */
export async function anonKey(environment: EnvironmentName, secret: string): Promise<string> {
  return new SignJWT({ role: ANON_ROLE }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuer(issuer(environment)).sign(key(secret));
}

export interface VerifiedToken {
  sub: string;
  /** Seconds since the epoch. */
  exp: number;
}

/**
 * The claims of a valid token for this environment, `anonymous` for the environment's anon key (a
 * valid token that reads no channel), or the reason it is refused (Supabase's wording where there is one).
 */
export async function verifyToken(environment: EnvironmentName, secret: string, token: unknown): Promise<VerifiedToken | { anonymous: true } | { refused: string }> {
  if (typeof token !== 'string' || token === '') return { refused: 'InvalidJWTToken: a private channel needs an access_token' };
  try {
    const { payload } = await jwtVerify(token, key(secret), { algorithms: ['HS256'], issuer: issuer(environment), requiredClaims: ['role'] });
    if (payload.role === ANON_ROLE) return { anonymous: true };
    if (payload.role !== TOKEN_ROLE) return { refused: `InvalidJWTToken: role must be ${TOKEN_ROLE}` };
    for (const claim of ['exp', 'sub'] as const) if (payload[claim] === undefined) return { refused: `InvalidJWTToken: missing required "${claim}" claim` };
    if (typeof payload.sub !== 'string' || !/^[0-9]{1,20}$/.test(payload.sub)) return { refused: 'InvalidJWTToken: sub must be a chat id' };
    return { sub: payload.sub, exp: payload.exp! };
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) return { refused: 'InvalidJWTToken: Token has expired' };
    if (err instanceof joseErrors.JWSSignatureVerificationFailed) return { refused: 'JwtSignatureError: Failed to validate JWT signature' };
    if (err instanceof joseErrors.JWTClaimValidationFailed) return { refused: `InvalidJWTToken: ${err.message}` };
    return { refused: 'MalformedJWT: The token provided is not a valid JWT' };
  }
}
