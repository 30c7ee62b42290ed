// Failed back to pending (spec: States and transitions, Report queue action), shared by the
// queue's own requeue route and the admin one: the same checks, the same state change and event.
import type { FastifyRequest } from 'fastify';
import { assertMayWorkQueue, reportFlaggedSql } from '../platform/auth/report-access.js';
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { lockAction, requeueAction, type ReportActionRow } from './queries.js';

export interface Requeued {
  before: ReportActionRow;
  after: ReportActionRow;
}

/**
 * The queue a report's action belongs to now: the supervisor one while its report is flagged (its
 * live row, or the pre-image of a report deleted flagged), whatever the stored column says.
 */
export async function currentQueue(tx: Tx, action: ReportActionRow): Promise<'operator' | 'supervisor'> {
  const { rows } = await tx.query<{ flagged: boolean }>(`select ${reportFlaggedSql('$1::text')} as flagged`, [action.report_id]);
  return rows[0]!.flagged ? 'supervisor' : 'operator';
}

/**
 * Locks the action, asks the policy whether the caller may work its queue as the report's flag now
 * decides it (report-access.ts: a supervisor-queue action is for Senior Agent rank and up), refuses
 * anything but a failed one (409 NOT_FAILED), resets it to pending with a fresh retry budget on that
 * queue and writes queue.action_requeued.
 */
export async function requeueFailedAction(tx: Tx, request: FastifyRequest, actionId: number): Promise<Requeued> {
  const locked = await lockAction(tx, actionId);
  if (!locked) throw errors.actionNotFound(actionId);
  const before = { ...locked, queue: await currentQueue(tx, locked) };
  assertMayWorkQueue(request, before.queue);
  if (before.status !== 'failed') throw errors.conflict(`Only a failed action can be requeued (status ${before.status})`, 'NOT_FAILED');
  const after = await requeueAction(tx, actionId, before.queue);
  await recordEvent(tx, {
    type: 'queue.action_requeued',
    actor: actorOf(request),
    correlationId: request.id,
    reportId: before.report_id,
    isSupervisor: before.queue === 'supervisor',
    before: { status: before.status, attempts: before.attempts },
    after: { status: after.status, attempts: after.attempts },
    data: { action_id: actionId, kind: before.kind, queue: before.queue },
  });
  return { before, after };
}
