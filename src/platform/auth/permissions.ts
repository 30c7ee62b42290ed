// The permission table and the rank ladder, as data. Minimum clearances come from spec
// Authentication 5; the levels the spec leaves open are DESIGN.md's "Decisions already taken".

export const MINIMUM_CLEARANCES = {
  view_dashboard: 1,
  add_case_note: 1,
  add_evidence: 1,
  manage_dockets: 2,
  view_agents: 2,
  view_punishments: 2,
  reassign_docket: 3,
  manage_agents: 4,
  manage_punishments: 4,
  decide_appeal: 4,
  admin_health: 4,
  admin_queue: 4,
  admin_audit: 4,
  admin_agents: 4,
  delete_docket: 5,
  admin_reports: 5,
  admin_schema: 5,
} as const satisfies Record<string, ClearanceLevel>;

export type Permission = keyof typeof MINIMUM_CLEARANCES;
export type ClearanceLevel = 1 | 2 | 3 | 4 | 5;
export const PERMISSIONS = Object.keys(MINIMUM_CLEARANCES) as Permission[];

/** Low to high. "Supervisor rank" means Supervisor or above. */
export const RANKS = ['Agent', 'Senior Agent', 'Supervisor', 'Head Investigator', 'Director'] as const;
export type Rank = (typeof RANKS)[number];

/** Ranks a permission needs on top of its clearance (spec Authentication 6). */
export const MINIMUM_RANKS: Partial<Record<Permission, Rank>> = {
  reassign_docket: 'Head Investigator',
  admin_reports: 'Director',
  admin_schema: 'Director',
};

/** Admin capabilities that only a Director holds, whatever the clearance (spec Authentication 6, 7). */
export const DIRECTOR_ONLY_CAPABILITIES = ['admin_access', 'admin_reports', 'admin_schema', 'change_rank', 'change_clearance'] as const;

export function isRank(value: unknown): value is Rank {
  return typeof value === 'string' && (RANKS as readonly string[]).includes(value);
}

/** Unknown or missing ranks sit below Agent, so they never pass a rank check. */
export function rankIndex(rank: string | null | undefined): number {
  return RANKS.indexOf(rank as Rank);
}

export function hasRank(rank: string | null | undefined, minimum: Rank): boolean {
  const index = rankIndex(rank);
  return index >= 0 && index >= RANKS.indexOf(minimum);
}

export const isSupervisorRank = (rank: string | null | undefined) => hasRank(rank, 'Supervisor');

/** A trainer (spec: "trainer" access): the is_trainer flag or supervisor rank. */
export const isTrainer = (agent: { is_trainer: boolean; agent_rank: string | null }) => agent.is_trainer || isSupervisorRank(agent.agent_rank);
export const isDirector = (rank: string | null | undefined) => hasRank(rank, 'Director');

export interface PermissionSubject {
  clearance_level: number | null;
  agent_rank: string | null;
}

export function hasPermission(subject: PermissionSubject, permission: Permission): boolean {
  const clearance = subject.clearance_level ?? 0;
  if (clearance < MINIMUM_CLEARANCES[permission]) return false;
  const rank = MINIMUM_RANKS[permission];
  return rank === undefined || hasRank(subject.agent_rank, rank);
}

/** Every permission flag for one agent, as GET /auth/me returns them. */
export function permissionFlags(subject: PermissionSubject): Record<Permission, boolean> {
  return Object.fromEntries(PERMISSIONS.map((p) => [p, hasPermission(subject, p)])) as Record<Permission, boolean>;
}
