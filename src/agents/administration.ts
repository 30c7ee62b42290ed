// The rules of administering an agent (spec: PATCH /admin/agents/<chat_id> and the dashboard path
// of PATCH /agents/<chat_id>/update), run on rows locked in the writing transaction, so a racing
// change or a caller demoted mid-request cannot slip past them.
import { errors } from '../platform/errors.js';
import { isDirector, rankIndex } from '../platform/auth/permissions.js';
import type { Tx } from '../platform/db/types.js';
import type { AgentChanges, AgentRow } from './queries.js';

/** Any fixed 64-bit number: serialises the "is a Director left?" checks of concurrent writers. */
const LAST_DIRECTOR_LOCK_KEY = 4_207_110_925;

/**
 * No self-modification; only targets at or below the caller's rank; rank and clearance changes
 * are Director-only (spec Authentication 6), and no one hands out a rank above their own.
 */
export function assertMayAdminister(caller: AgentRow, target: AgentRow, changes: AgentChanges): void {
  if (caller.chat_id === target.chat_id) throw errors.forbidden('You cannot modify your own agent record', 'SELF_MODIFICATION');
  if (rankIndex(target.agent_rank) > rankIndex(caller.agent_rank)) {
    throw errors.forbidden('You cannot modify an agent ranked above yourself', 'RANK_HIERARCHY');
  }
  const rankChange = changes.agent_rank !== undefined && changes.agent_rank !== target.agent_rank;
  const clearanceChange = changes.clearance_level !== undefined && changes.clearance_level !== target.clearance_level;
  if ((rankChange || clearanceChange) && !isDirector(caller.agent_rank)) throw errors.forbidden('Director access required', 'DIRECTOR_REQUIRED');
  if (rankChange && rankIndex(changes.agent_rank) > rankIndex(caller.agent_rank)) {
    throw errors.forbidden('You cannot give a rank above your own', 'RANK_HIERARCHY');
  }
}

/** A change that may take an active allowlisted Director away (rank, status or allowlist). */
export function mayRemoveDirector(before: AgentRow, changes: AgentChanges): boolean {
  if (!isDirector(before.agent_rank)) return false;
  return (changes.agent_rank !== undefined && !isDirector(changes.agent_rank)) || (changes.status !== undefined && changes.status !== 'active');
}

/**
 * Run after such a change, inside its transaction: the organisation keeps at least one active
 * Director on the active allowlist. The advisory lock makes concurrent writers check one after
 * the other, each seeing the others' committed changes (READ COMMITTED: a fresh snapshot per statement).
 */
export async function assertDirectorRemains(tx: Tx): Promise<void> {
  await tx.query('select pg_advisory_xact_lock($1::bigint)', [LAST_DIRECTOR_LOCK_KEY]);
  const { rows } = await tx.query<{ remains: boolean }>(
    `select exists (select 1 from agents a join admin_allowlist l on l.chat_id = a.chat_id
                    where l.active and a.status = 'active' and a.agent_rank = 'Director') as remains`,
  );
  if (!rows[0]?.remains) throw errors.conflict('This change would leave the organisation without an active Director on the admin allowlist', 'LAST_DIRECTOR');
}

/** The fields whose value a change actually alters. */
export function changedFields(before: AgentRow, changes: AgentChanges): (keyof AgentChanges)[] {
  return (Object.keys(changes) as (keyof AgentChanges)[]).filter((field) => changes[field] !== before[field]);
}

export const pick = (row: AgentRow, fields: readonly (keyof AgentChanges)[]) => Object.fromEntries(fields.map((f) => [f, row[f]]));
