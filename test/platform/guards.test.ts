// The reusable authorization guards: require_admin, the supervisor rule, the assigned-agent rule.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { AgentRow } from '../../src/agents/queries.js';
import { assertAssignedAgent, assertMaySeeSupervisor, requireAdmin, sessionAgent } from '../../src/platform/auth/guards.js';
import type { Rank } from '../../src/platform/auth/permissions.js';
import { AppError } from '../../src/platform/errors.js';

const agent = (chat_id: string, agent_rank: Rank, clearance_level: number, status = 'active') => ({ chat_id, agent_rank, clearance_level, status }) as AgentRow;
const asSession = (a: AgentRow, allowlisted = false) => ({ principal: { kind: 'session', agent: a, allowlisted, token: 't' } }) as unknown as FastifyRequest;
const asKey = { principal: { kind: 'key' } } as unknown as FastifyRequest;

function refusal(fn: () => unknown): { status: number; error: string; code?: string } | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { status: err.statusCode, error: err.message, code: err.code };
  }
}

describe('requireAdmin', () => {
  it('needs a session: the key is refused with 403', () => {
    expect(refusal(() => requireAdmin(asKey, 'admin_health'))).toMatchObject({ status: 403, code: 'SESSION_REQUIRED' });
    expect(refusal(() => sessionAgent(asKey))).toMatchObject({ status: 403 });
  });

  it('needs an active allowlist entry', () => {
    expect(refusal(() => requireAdmin(asSession(agent('1', 'Director', 5)), 'admin_health'))).toEqual({
      status: 403,
      error: 'Not an admin user',
      code: 'NOT_ADMIN',
    });
  });

  it('needs an active agent: an allowlisted onboarding or suspended agent is not an admin', () => {
    for (const status of ['onboarding', 'suspended']) {
      expect(refusal(() => requireAdmin(asSession(agent('1', 'Director', 5, status), true), 'admin_health'))).toMatchObject({ code: 'NOT_ADMIN' });
    }
  });

  it('needs the capability clearance', () => {
    expect(refusal(() => requireAdmin(asSession(agent('1', 'Director', 3), true), 'admin_queue'))).toMatchObject({ status: 403, error: 'Insufficient clearance' });
    expect(requireAdmin(asSession(agent('1', 'Supervisor', 4), true), 'admin_queue').chat_id).toBe('1');
  });

  it.each(['admin_reports', 'admin_schema', 'admin_access'] as const)('%s is for Directors only', (capability) => {
    expect(refusal(() => requireAdmin(asSession(agent('1', 'Head Investigator', 5), true), capability))).toEqual({
      status: 403,
      error: 'Director access required',
      code: 'DIRECTOR_REQUIRED',
    });
    expect(requireAdmin(asSession(agent('1', 'Director', 5), true), capability).chat_id).toBe('1');
  });
});

describe('the supervisor rule', () => {
  it('lets supervisor rank and the bot see supervisor-flagged records, nobody else', () => {
    for (const rank of ['Supervisor', 'Head Investigator', 'Director'] as const) {
      expect(refusal(() => assertMaySeeSupervisor(asSession(agent('1', rank, 1)), true))).toBeUndefined();
    }
    expect(refusal(() => assertMaySeeSupervisor(asKey, true))).toBeUndefined();
    expect(refusal(() => assertMaySeeSupervisor(asSession(agent('1', 'Senior Agent', 5)), true))).toEqual({
      status: 403,
      error: 'Supervisor reports require supervisor rank',
      code: 'SUPERVISOR_ONLY',
    });
    expect(refusal(() => assertMaySeeSupervisor(asSession(agent('1', 'Agent', 1)), false))).toBeUndefined();
  });
});

describe('the assigned-agent rule', () => {
  it('lets the assigned agent act; others get 403; the bot is not bound by it', () => {
    expect(refusal(() => assertAssignedAgent(asSession(agent('7', 'Agent', 2)), '7'))).toBeUndefined();
    expect(refusal(() => assertAssignedAgent(asSession(agent('8', 'Agent', 2)), '7'))).toEqual({
      status: 403,
      error: 'Only the assigned agent may do this',
      code: 'NOT_ASSIGNED',
    });
    expect(refusal(() => assertAssignedAgent(asSession(agent('8', 'Agent', 2)), null))).toMatchObject({ status: 403 });
    expect(refusal(() => assertAssignedAgent(asKey, '7'))).toBeUndefined();
  });

  it('lets supervisor rank act where the rule allows it', () => {
    const supervisor = asSession(agent('9', 'Supervisor', 4));
    expect(refusal(() => assertAssignedAgent(supervisor, '7'))).toMatchObject({ status: 403 });
    expect(refusal(() => assertAssignedAgent(supervisor, '7', { supervisorMayAct: true }))).toBeUndefined();
  });
});
