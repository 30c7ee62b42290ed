// The agent row as authentication needs it: a session resolves to one, and the guards and
// permissions judge it. It lives in the platform because sessions read it on every request; the
// agents domain (src/agents/queries.ts) reads and writes the same row through these definitions.
// Chat ids are text: snowflakes exceed 2^53.

export const AGENT_STATUSES = ['onboarding', 'active', 'suspended', 'inactive'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];
/** Statuses allowed to sign in (spec Authentication 4). */
export const SIGN_IN_STATUSES: readonly string[] = ['active', 'onboarding'];

export interface AgentRow {
  chat_id: string;
  name: string | null;
  status: AgentStatus;
  agent_rank: string | null;
  security_id: string | null;
  agreement_id: string | null;
  agent_id: string | null;
  clearance_id: string | null;
  clearance_level: number | null;
  is_trainer: boolean;
  created_at: string;
  updated_at: string;
}

const AGENT_COLUMN_NAMES = ['chat_id', 'name', 'status', 'agent_rank', 'security_id', 'agreement_id', 'agent_id', 'clearance_id',
  'clearance_level', 'is_trainer', 'created_at', 'updated_at'];
/** The select list of an agent row, optionally qualified by a table alias. */
export const agentColumns = (alias?: string) => AGENT_COLUMN_NAMES.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');
export const AGENT_COLUMNS = agentColumns();
