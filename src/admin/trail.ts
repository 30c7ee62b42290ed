// The trail every admin mutation leaves (spec: System administration, Events): one admin audit row
// and the canonical event of the same name, written with the change in the caller's transaction,
// tied together by the request's correlation id. And the re-check that makes a guard hold at
// commit time: the caller's own rows are locked with the targets and require_admin runs again.
import type { FastifyRequest } from 'fastify';
import { lockAgents, type LockedAgent } from '../agents/queries.js';
import { recordAudit } from '../platform/audit.js';
import { adminRefusal, sessionAgent, type AdminCapability } from '../platform/auth/guards.js';
import type { Tx } from '../platform/db/types.js';
import { recordEvent, type Actor, type EventType } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';

export type AdminAction = Extract<EventType, `admin.${string}`>;

export interface AdminChange {
  action: AdminAction;
  target: string | null;
  reason: string;
  before?: unknown;
  after?: unknown;
  /** The event's data beyond before/after (e.g. what a sweep moved). */
  data?: unknown;
  reportId?: string | null;
  isSupervisor?: boolean;
}

/** Writes the admin audit row and its event; returns the correlation id the answer carries. */
export async function recordAdminChange(tx: Tx, request: FastifyRequest, change: AdminChange): Promise<string> {
  await recordAdminChangeBy(tx, actorOf(request), request.id, change);
  return request.id;
}

/**
 * The same trail for a caller that is not a request: an operator's CLI command. Its audit row
 * says `operator`; its event, whose actors are agents, the bot or the service, says `system`.
 */
export async function recordAdminChangeBy(tx: Tx, actor: Actor | { kind: 'operator' }, correlationId: string, change: AdminChange): Promise<void> {
  await recordAudit(tx, { actor, action: change.action, target: change.target, reason: change.reason, before: change.before, after: change.after, correlationId });
  await recordEvent(tx, {
    type: change.action,
    actor: actor.kind === 'operator' ? { kind: 'system' } : actor,
    correlationId,
    reportId: change.reportId ?? null,
    before: change.before,
    after: change.after,
    data: { reason: change.reason, target: change.target, ...(change.data === undefined ? {} : { details: change.data }) },
    isSupervisor: change.isSupervisor ?? false,
  });
}

/**
 * Locks the caller's agent and allowlist rows together with the other agents the change touches
 * (one order for everyone, so two admins acting on each other queue instead of deadlocking), then
 * runs require_admin again on what is now committed: a caller revoked or demoted while the
 * request was in flight is refused here. Returns the locked rows by chat id.
 */
export async function lockAdmins(
  tx: Tx,
  request: FastifyRequest,
  capability: AdminCapability,
  others: readonly string[] = [],
): Promise<Map<string, LockedAgent>> {
  const caller = sessionAgent(request);
  const locked = await lockAgents(tx, [caller.chat_id, ...others]);
  const self = locked.get(caller.chat_id);
  const refusal = self ? adminRefusal(self, self.allowlisted, capability) : adminRefusal(caller, false, capability);
  if (refusal) throw refusal;
  return locked;
}
