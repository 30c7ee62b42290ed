// The fictional agents the demo's local sign-in offers (DEMO_LOCAL_SIGNIN): the seeded ones only,
// as the demo database has them now (a rename, a suspension or a reset shows at once).
import { DEMO_AGENTS } from '../demo/seed.js';
import type { Queryable } from '../platform/db/types.js';

/** Chat ids of the seeded fictional agents, in seed order (the four personas first). */
export const FICTIONAL_CHAT_IDS: readonly string[] = DEMO_AGENTS.map((a) => a.chat_id);

export interface LocalSignInAgent {
  chat_id: string;
  name: string | null;
  status: string;
  agent_rank: string | null;
  clearance_level: number | null;
  is_trainer: boolean;
  /** An active admin allowlist entry. */
  admin: boolean;
}

/** The fictional agents among `chatIds` that the demo database holds, in seed order. */
export async function findFictionalAgents(db: Queryable, chatIds: readonly string[] = FICTIONAL_CHAT_IDS): Promise<LocalSignInAgent[]> {
  const wanted = chatIds.filter((id) => FICTIONAL_CHAT_IDS.includes(id));
  if (wanted.length === 0) return [];
  const { rows } = await db.query<LocalSignInAgent>(
    `select a.chat_id, a.name, a.status, a.agent_rank, a.clearance_level, a.is_trainer, coalesce(l.active, false) as admin
     from agents a left join admin_allowlist l on l.chat_id = a.chat_id
     where a.chat_id = any($1::text[])
     order by array_position($2::text[], a.chat_id)`,
    [wanted, FICTIONAL_CHAT_IDS],
  );
  return rows;
}
