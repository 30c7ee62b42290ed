// The permission table and rank ladder (spec Authentication 5 and 6; DESIGN.md decisions).
import { describe, expect, it } from 'vitest';
import {
  hasPermission,
  hasRank,
  isDirector,
  isSupervisorRank,
  MINIMUM_CLEARANCES,
  permissionFlags,
  RANKS,
} from '../../src/platform/auth/permissions.js';

describe('permission table', () => {
  it('holds the spec levels and the levels DESIGN.md decided', () => {
    expect(MINIMUM_CLEARANCES).toEqual({
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
    });
  });

  it('grants a permission from its minimum clearance up, never below', () => {
    for (const [permission, level] of Object.entries(MINIMUM_CLEARANCES) as [keyof typeof MINIMUM_CLEARANCES, number][]) {
      const rank = 'Director';
      expect(hasPermission({ clearance_level: level - 1, agent_rank: rank }, permission), `${permission} at ${level - 1}`).toBe(false);
      expect(hasPermission({ clearance_level: level, agent_rank: rank }, permission), `${permission} at ${level}`).toBe(true);
    }
    expect(hasPermission({ clearance_level: null, agent_rank: 'Director' }, 'view_dashboard')).toBe(false);
  });

  it('adds the rank each rank-bound permission needs', () => {
    expect(hasPermission({ clearance_level: 5, agent_rank: 'Supervisor' }, 'reassign_docket')).toBe(false);
    expect(hasPermission({ clearance_level: 3, agent_rank: 'Head Investigator' }, 'reassign_docket')).toBe(true);
    expect(hasPermission({ clearance_level: 5, agent_rank: 'Head Investigator' }, 'admin_schema')).toBe(false);
    expect(hasPermission({ clearance_level: 5, agent_rank: 'Director' }, 'admin_reports')).toBe(true);
  });

  it('lists every flag for /auth/me', () => {
    const flags = permissionFlags({ clearance_level: 2, agent_rank: 'Agent' });
    expect(Object.keys(flags).sort()).toEqual(Object.keys(MINIMUM_CLEARANCES).sort());
    expect(flags).toMatchObject({ manage_dockets: true, view_punishments: true, reassign_docket: false, delete_docket: false });
  });
});

describe('rank ladder', () => {
  it('runs Agent < Senior Agent < Supervisor < Head Investigator < Director', () => {
    expect(RANKS).toEqual(['Agent', 'Senior Agent', 'Supervisor', 'Head Investigator', 'Director']);
    expect(hasRank('Senior Agent', 'Senior Agent')).toBe(true);
    expect(hasRank('Agent', 'Senior Agent')).toBe(false);
    expect(hasRank('Director', 'Senior Agent')).toBe(true);
  });

  it('counts Supervisor and above as supervisor rank; unknown ranks as nothing', () => {
    expect(RANKS.map(isSupervisorRank)).toEqual([false, false, true, true, true]);
    expect(RANKS.map(isDirector)).toEqual([false, false, false, false, true]);
    for (const rank of [null, undefined, '', 'director', 'Overlord']) {
      expect(isSupervisorRank(rank)).toBe(false);
      expect(hasRank(rank, 'Agent')).toBe(false);
    }
  });
});
