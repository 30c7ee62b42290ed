// The reusable authorization guards: require_admin; and the report policy's supervisor rule and assignment gate.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { AgentRow } from '../../src/agents/queries.js';
import { requireAdmin, sessionAgent } from '../../src/platform/auth/guards.js';
import { assertMaySeeReport, assertMayUpdateReport, assertMayWorkOnReport, visibleToSql } from '../../src/platform/auth/report-access.js';
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

describe('the supervisor rule (report-access.ts)', () => {
  it('lets supervisor rank and the bot see supervisor-flagged reports, nobody else', () => {
    for (const rank of ['Supervisor', 'Head Investigator', 'Director'] as const) {
      expect(refusal(() => assertMaySeeReport(asSession(agent('1', rank, 1)), { is_supervisor: true }))).toBeUndefined();
    }
    expect(refusal(() => assertMaySeeReport(asKey, { is_supervisor: true }))).toBeUndefined();
    expect(refusal(() => assertMaySeeReport(asSession(agent('1', 'Senior Agent', 5)), { is_supervisor: true }))).toEqual({
      status: 403,
      error: 'Supervisor reports require supervisor rank',
      code: 'SUPERVISOR_ONLY',
    });
    expect(refusal(() => assertMaySeeReport(asSession(agent('1', 'Agent', 1)), { is_supervisor: false }))).toBeUndefined();
  });

  it('is the SQL predicate too: true for those who see everything, the current flag for others', () => {
    expect(visibleToSql({ kind: 'key' }, ['e.report_id'])).toBe('true');
    const sql = visibleToSql({ kind: 'session', agent: agent('1', 'Senior Agent', 5), allowlisted: true, token: 't' }, ['e.report_id', 'x']);
    // One probe per table for all the row's reports: the live flag, and the pre-image of a deleted one.
    expect(sql).toBe(
      "not exists (select 1 from reports fr where fr.report_id in (e.report_id, x) and fr.is_supervisor) and " +
        "not exists (select 1 from deleted_reports fd where fd.report_id in (e.report_id, x) and (fd.pre_image ->> 'is_supervisor')::boolean)",
    );
  });
});

describe('the assignment gate (report-access.ts)', () => {
  const report = (assigned_agent: string | null, is_supervisor = false) => ({ assigned_agent, is_supervisor });
  const NOT_ASSIGNED = { status: 403, error: 'Only the assigned agent may do this', code: 'NOT_ASSIGNED' };

  it('lets the assigned agent act; others get 403; the bot is not bound by it', () => {
    for (const work of ['update', 'act', 'timeline', 'contact', 'note', 'evidence'] as const) {
      expect(refusal(() => assertMayWorkOnReport(asSession(agent('7', 'Agent', 2)), report('7'), work)), work).toBeUndefined();
      expect(refusal(() => assertMayWorkOnReport(asSession(agent('8', 'Agent', 2)), report('7'), work)), work).toEqual(NOT_ASSIGNED);
      expect(refusal(() => assertMayWorkOnReport(asSession(agent('8', 'Agent', 2)), report(null), work)), work).toEqual(NOT_ASSIGNED);
      expect(refusal(() => assertMayWorkOnReport(asKey, report('7', true), work)), work).toBeUndefined();
    }
  });

  it('lets supervisor rank add notes and evidence only: the spec states it for those, not for the thread, timeline or fields', () => {
    const supervisor = asSession(agent('9', 'Director', 5));
    for (const work of ['note', 'evidence'] as const) expect(refusal(() => assertMayWorkOnReport(supervisor, report('7', true), work))).toBeUndefined();
    for (const work of ['update', 'act', 'timeline', 'contact'] as const) expect(refusal(() => assertMayWorkOnReport(supervisor, report('7'), work)), work).toEqual(NOT_ASSIGNED);
  });

  it('asks the supervisor rule first: an assigned Agent on a report flagged since is refused', () => {
    expect(refusal(() => assertMayWorkOnReport(asSession(agent('7', 'Agent', 2)), report('7', true), 'contact'))).toMatchObject({ code: 'SUPERVISOR_ONLY' });
  });

  it('asks reassignment and every other field of an update separately', () => {
    const head = asSession(agent('9', 'Head Investigator', 5));
    expect(refusal(() => assertMayUpdateReport(head, report('7'), ['assigned_agent']))).toBeUndefined();
    expect(refusal(() => assertMayUpdateReport(head, report('7'), ['assigned_agent', 'status']))).toEqual(NOT_ASSIGNED);
    expect(refusal(() => assertMayUpdateReport(asSession(agent('7', 'Agent', 2)), report('7'), ['assigned_agent']))).toMatchObject({ error: 'Insufficient clearance' });
    expect(refusal(() => assertMayUpdateReport(asSession(agent('7', 'Agent', 2)), report('7'), ['notes']))).toMatchObject({ code: 'BOT_ONLY_FIELD' });
  });
});
