// Agent rows, read and written in one place. The row's shape and columns are the platform's
// (src/platform/auth/agent-row.ts: a session resolves to an agent), re-exported here for this
// domain's callers.
import { AGENT_COLUMNS, agentColumns, type AgentRow, type AgentStatus } from '../platform/auth/agent-row.js';
import type { Queryable, Tx } from '../platform/db/types.js';

export { AGENT_COLUMNS, AGENT_STATUSES, agentColumns, SIGN_IN_STATUSES, type AgentRow, type AgentStatus } from '../platform/auth/agent-row.js';

export async function listAgents(db: Queryable, status?: string): Promise<AgentRow[]> {
  const { rows } = await db.query<AgentRow>(
    `select ${AGENT_COLUMNS} from agents where ($1::text is null or status = $1::text) order by created_at desc, creation_order desc`,
    [status ?? null],
  );
  return rows;
}

export async function findAgent(db: Queryable, chatId: string, options: { forUpdate?: boolean } = {}): Promise<AgentRow | undefined> {
  const { rows } = await db.query<AgentRow>(
    `select ${AGENT_COLUMNS} from agents where chat_id = $1::text${options.forUpdate ? ' for update' : ''}`,
    [chatId],
  );
  return rows[0];
}

export interface NewAgent {
  chat_id: string;
  name?: string | null | undefined;
  status?: AgentStatus | undefined;
  agent_rank?: string | null | undefined;
  clearance_level?: number | null | undefined;
  is_trainer?: boolean | undefined;
}

/** Inserts an agent; returns undefined when the chat id is taken (no exception, no aborted tx). */
export async function insertAgent(db: Queryable, agent: NewAgent): Promise<AgentRow | undefined> {
  const { rows } = await db.query<AgentRow>(
    `insert into agents (chat_id, name, status, agent_rank, clearance_level, is_trainer)
     values ($1::text, $2::text, coalesce($3::text, 'onboarding'), $4::text, $5::smallint, coalesce($6::boolean, false))
     on conflict (chat_id) do nothing
     returning ${AGENT_COLUMNS}`,
    [agent.chat_id, agent.name ?? null, agent.status ?? null, agent.agent_rank ?? null, agent.clearance_level ?? null, agent.is_trainer ?? null],
  );
  return rows[0];
}

/** Columns an update may set; the route decides which of them a caller may touch. */
export const UPDATABLE_AGENT_FIELDS = [
  'name',
  'status',
  'agent_rank',
  'security_id',
  'agreement_id',
  'agent_id',
  'clearance_id',
  'clearance_level',
  'is_trainer',
] as const;
export type AgentChanges = Partial<Pick<AgentRow, (typeof UPDATABLE_AGENT_FIELDS)[number]>>;

export async function updateAgent(db: Queryable, chatId: string, changes: AgentChanges): Promise<AgentRow> {
  const fields = UPDATABLE_AGENT_FIELDS.filter((field) => field in changes);
  const assignments = fields.map((field, i) => `${field} = $${i + 2}`);
  const { rows } = await db.query<AgentRow>(
    `update agents set ${[...assignments, 'updated_at = now()'].join(', ')} where chat_id = $1::text returning ${AGENT_COLUMNS}`,
    [chatId, ...fields.map((field) => changes[field] ?? null)],
  );
  return rows[0]!;
}

export interface LockedAgent extends AgentRow {
  /** An active admin allowlist entry exists. */
  allowlisted: boolean;
  /** An allowlist entry exists at all (active or not). */
  listed: boolean;
}

/** The agent row alone, without the allowlist flags the lock read with it. */
export function agentOf({ allowlisted: _allowlisted, listed: _listed, ...agent }: LockedAgent): AgentRow {
  return agent;
}

/**
 * Locks agents and their allowlist entries in chat id order (the same order for every caller, so
 * no deadlock), then reads them. Two statements on purpose: a locking join re-evaluates only the
 * locked rows after waiting, and would pair a fresh agent row with the allowlist row of the old
 * snapshot; the second statement starts after the locks are held and sees every committed change.
 */
export async function lockAgents(tx: Tx, chatIds: readonly string[]): Promise<Map<string, LockedAgent>> {
  const ids = [...new Set(chatIds)].sort();
  await tx.query('select chat_id from agents where chat_id = any($1::text[]) order by chat_id for update', [ids]);
  await tx.query('select chat_id from admin_allowlist where chat_id = any($1::text[]) order by chat_id for update', [ids]);
  const { rows } = await tx.query<LockedAgent>(
    `select ${agentColumns('a')}, coalesce(l.active, false) as allowlisted, l.chat_id is not null as listed
     from agents a left join admin_allowlist l on l.chat_id = a.chat_id where a.chat_id = any($1::text[])`,
    [ids],
  );
  return new Map(rows.map((row) => [row.chat_id, row]));
}
