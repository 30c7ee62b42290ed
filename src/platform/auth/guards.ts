// Reusable authorization guards for handlers (spec Authentication 7). The route's declared auth and
// permission run first (request-context.ts); who sees and changes a report is report-access.ts.
import type { FastifyRequest } from 'fastify';
import type { AgentRow } from './agent-row.js';
import { errors, type AppError } from '../errors.js';
import { isDirector, MINIMUM_CLEARANCES } from './permissions.js';

/** Admin capabilities (spec: System administration). `admin_access` is the allowlist itself. */
export const ADMIN_CAPABILITIES = ['admin_health', 'admin_queue', 'admin_audit', 'admin_agents', 'admin_reports', 'admin_schema', 'admin_access'] as const;
export type AdminCapability = (typeof ADMIN_CAPABILITIES)[number];
const DIRECTOR_ONLY: ReadonlySet<AdminCapability> = new Set(['admin_reports', 'admin_schema', 'admin_access']);

/** The signed-in agent; the API key gets 403 (a session-only operation). */
export function sessionAgent(request: FastifyRequest): AgentRow {
  if (request.principal?.kind !== 'session') throw errors.sessionRequired();
  return request.principal.agent;
}

/** What the dashboard may offer this agent: computed here so the client never decides. */
export function adminCapabilities(agent: AgentRow, allowlisted: boolean): Record<AdminCapability, boolean> {
  // The reasons, not the refusals: an error object (with its stack) per capability cost a fifth of
  // the CPU of GET /auth/me (docs/performance.md, metrics-overhead).
  return Object.fromEntries(ADMIN_CAPABILITIES.map((c) => [c, adminRefusalReason(agent, allowlisted, c) === undefined])) as Record<AdminCapability, boolean>;
}

type AdminRefusalReason = 'not_admin' | 'director_required' | 'insufficient_clearance';

/**
 * Why require_admin (spec Authentication 7) refuses this agent the capability, or undefined when
 * it does not: an active agent on the active allowlist, the capability's clearance, and Director
 * rank for the Director-only capabilities.
 */
function adminRefusalReason(agent: AgentRow, allowlisted: boolean, capability: AdminCapability): AdminRefusalReason | undefined {
  if (!allowlisted || agent.status !== 'active') return 'not_admin';
  if (DIRECTOR_ONLY.has(capability) && !isDirector(agent.agent_rank)) return 'director_required';
  if (capability !== 'admin_access' && (agent.clearance_level ?? 0) < MINIMUM_CLEARANCES[capability]) return 'insufficient_clearance';
  return undefined;
}

/** The refusal require_admin answers, or undefined. Also run inside admin transactions on the locked row. */
export function adminRefusal(agent: AgentRow, allowlisted: boolean, capability: AdminCapability): AppError | undefined {
  switch (adminRefusalReason(agent, allowlisted, capability)) {
    case undefined:
      return undefined;
    case 'not_admin':
      return errors.forbidden('Not an admin user', 'NOT_ADMIN');
    case 'director_required':
      return errors.forbidden('Director access required', 'DIRECTOR_REQUIRED');
    case 'insufficient_clearance':
      return errors.insufficientClearance();
  }
}

/** require_admin for a handler: the signed-in agent when it holds the capability, else the refusal. */
export function requireAdmin(request: FastifyRequest, capability: AdminCapability): AgentRow {
  const agent = sessionAgent(request);
  const allowlisted = request.principal?.kind === 'session' && request.principal.allowlisted;
  const refusal = adminRefusal(agent, allowlisted, capability);
  if (refusal) throw refusal;
  return agent;
}
