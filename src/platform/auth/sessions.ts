// Browser sessions: an opaque random token in an HttpOnly cookie; only its SHA-256 is stored, in
// the environment's own database. The token carries its environment as a prefix, so a cookie
// minted for one environment is refused by the other before any lookup.
import { createHash, randomBytes } from 'node:crypto';
import { agentColumns, SIGN_IN_STATUSES, type AgentRow } from './agent-row.js';
import type { EnvironmentName } from '../../config.js';
import type { Queryable } from '../db/types.js';

export const SESSION_COOKIE = 'cms_session';
/** Absolute lifetime: a day's shift; signing in again starts a new session. */
export const SESSION_TTL_SECONDS = 12 * 60 * 60;

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export function newToken(environment: EnvironmentName): string {
  return `${environment}.${randomBytes(32).toString('base64url')}`;
}

export function tokenEnvironment(token: string): string {
  return token.slice(0, Math.max(0, token.indexOf('.')));
}

/** A session could not start: the OAuth state it came with has already started one (a replay). */
export class StateAlreadyUsed extends Error {}

/**
 * A new session for `chatId`. `oauthStateHash` is the SHA-256 of the OAuth state that vouched for
 * it: a state starts at most one session (unique), so a replayed callback gets StateAlreadyUsed.
 */
export async function createSession(db: Queryable, environment: EnvironmentName, chatId: string, oauthStateHash?: string): Promise<{ token: string; expiresAt: Date }> {
  const token = newToken(environment);
  // Sign-ins are rare next to requests: a good moment to sweep expired rows (indexed).
  await db.query('delete from sessions where expires_at <= now()');
  const { rows } = await db.query<{ expires_at: string }>(
    `insert into sessions (token_hash, chat_id, expires_at, oauth_state_hash)
     values ($1::text, $2::text, now() + make_interval(secs => $3::int), $4::text)
     on conflict (oauth_state_hash) do nothing
     returning expires_at`,
    [hashToken(token), chatId, SESSION_TTL_SECONDS, oauthStateHash ?? null],
  );
  if (rows[0] === undefined) throw new StateAlreadyUsed('this sign-in state has already started a session');
  return { token, expiresAt: new Date(rows[0].expires_at) };
}

export interface SessionAgent {
  agent: AgentRow;
  /** An active entry on the admin allowlist (require_admin's first condition). */
  allowlisted: boolean;
  expiresAt: string;
}

/**
 * The live agent behind a session cookie, with its allowlist flag: one indexed query per request,
 * so a demotion, a deactivation, a clearance or allowlist change applies on the very next
 * request, on every instance.
 */
export async function findSessionAgent(db: Queryable, environment: EnvironmentName, token: string): Promise<SessionAgent | undefined> {
  if (tokenEnvironment(token) !== environment) return undefined;
  const { rows } = await db.query<AgentRow & { allowlisted: boolean; session_expires_at: string }>(
    `select ${agentColumns('a')}, coalesce(l.active, false) as allowlisted, s.expires_at as session_expires_at
     from sessions s
     join agents a on a.chat_id = s.chat_id
     left join admin_allowlist l on l.chat_id = a.chat_id
     where s.token_hash = $1::text and s.expires_at > now() and a.status = any($2::text[])`,
    [hashToken(token), SIGN_IN_STATUSES],
    // Every admin request reads it live (and every request on a cold cache): planned once per connection.
    { name: 'find_session_agent' },
  );
  const row = rows[0];
  if (!row) return undefined;
  const { allowlisted, session_expires_at: expiresAt, ...agent } = row;
  return { agent, allowlisted, expiresAt };
}

/** Deletes a session; returns its agent's chat id (to clear caches) when there was one. */
export async function destroySession(db: Queryable, token: string): Promise<string | undefined> {
  const { rows } = await db.query<{ chat_id: string }>('delete from sessions where token_hash = $1::text returning chat_id', [hashToken(token)]);
  return rows[0]?.chat_id;
}
