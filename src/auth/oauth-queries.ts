// Sign-in attempts between /auth/chat/login and /auth/chat/callback (table oauth_states). Only
// the SHA-256 of the state is stored; a state is consumed exactly once, by its callback.
import type { Queryable } from '../platform/db/types.js';

/** How long a browser has to come back from the chat platform. */
export const OAUTH_STATE_TTL_SECONDS = 10 * 60;

export interface OAuthAttempt {
  returnTo: string | null;
  popup: boolean;
}

/** Records an attempt, and sweeps the expired ones in the same statement. */
export async function insertOAuthState(db: Queryable, stateHash: string, attempt: OAuthAttempt): Promise<void> {
  await db.query(
    `with swept as (delete from oauth_states where expires_at <= now())
     insert into oauth_states (state_hash, return_to, popup, expires_at)
     values ($1::text, $2::text, $3::boolean, now() + make_interval(secs => $4::int))`,
    [stateHash, attempt.returnTo, attempt.popup, OAUTH_STATE_TTL_SECONDS],
  );
}

/**
 * Deletes the attempt and returns it when it was still live. Single use: a second callback with
 * the same state finds nothing, and an expired row is removed without being honoured.
 */
export async function consumeOAuthState(db: Queryable, stateHash: string): Promise<OAuthAttempt | undefined> {
  const { rows } = await db.query<{ return_to: string | null; popup: boolean; live: boolean }>(
    `delete from oauth_states where state_hash = $1::text
     returning return_to, popup, expires_at > now() as live`,
    [stateHash],
  );
  const row = rows[0];
  return row?.live ? { returnTo: row.return_to, popup: row.popup } : undefined;
}
