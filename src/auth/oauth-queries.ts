// Single use of an OAuth state without a row per attempt: the session a state starts keeps the
// state's SHA-256 (sessions.oauth_state_hash, unique), so a replayed callback finds it there.
import type { Queryable } from '../platform/db/types.js';

/** True when a session was already started with this state (the callback is a replay). */
export async function stateStartedSession(db: Queryable, stateHash: string): Promise<boolean> {
  const { rowCount } = await db.query('select 1 from sessions where oauth_state_hash = $1::text', [stateHash]);
  return rowCount > 0;
}
