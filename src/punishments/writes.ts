// The three punishment writes (spec: Punishments and discipline; States and transitions,
// Punishment): issue, update, revoke. Each is one transaction with its audit row, its event and,
// where the chat platform must hear of it, its discipline delivery.
import type { FastifyRequest } from 'fastify';
import { enqueueDelivery, enqueueIssueDeliveries } from '../discipline/queries.js';
import { isPseudonym } from '../platform/audit-chain/personal-fields.js';
import { recordAudit } from '../platform/audit.js';
import { sessionAgent } from '../platform/auth/guards.js';
import { assertMaySeeReport, punishmentFlagged } from '../platform/auth/report-access.js';
import type { Tx } from '../platform/db/types.js';
import { AppError, errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { eventReportId, findCitedReport, revokePunishment, updatePunishmentFields, type PunishmentChanges, type UpdatableColumn } from './changes.js';
import {
  expirePunishmentIfDue, expiryFromDuration, insertPunishment, IN_FORCE, isEmptyDuration, loadPunishment, lockPunishment,
  type Punishment, type RestrictedPunishment,
} from './queries.js';
import { EDITABLE_FIELDS, type CreatePunishmentBody, type UpdatePunishmentBody } from './schemas.js';

export const punishmentNotFound = (id: string) => new AppError(404, `Punishment ${id} not found`, 'PUNISHMENT_NOT_FOUND');

/** A punishment as read for its caller, or the refusal of one citing a report they may not see (report-access.ts). */
export function shownOrRefused(found: Punishment | RestrictedPunishment | undefined, id: string): Punishment {
  if (!found) throw punishmentNotFound(id);
  if ('restricted' in found) throw errors.forbidden('Supervisor reports require supervisor rank', 'SUPERVISOR_ONLY');
  return found;
}

/**
 * A write's answer, read in its transaction after the write, the punishment's row still held:
 * what GET /punishments/<id> shows this caller at that moment, with the expiry its sweep would
 * apply first. The cited report's flag is read again here, from the state the answer comes from:
 * a flag committed since the write's check refuses the caller now, and the write rolls back with
 * the refusal, as if the flag had come first, rather than answering 403 for a change that was
 * made (issue 38). Locking the report for the write instead would order the punishment's row
 * before the report's, the reverse of a report's deletion, which clears its punishments' report_id.
 */
async function answerOf(tx: Tx, request: FastifyRequest, id: string): Promise<Punishment> {
  await expirePunishmentIfDue(tx, id, request.id);
  return shownOrRefused(await loadPunishment(tx, request.principal, id), id);
}

/** A client sets Active or Appealed; Expired and Revoked are the service's own moves. */
function assertSettableStatus(status: string | undefined): void {
  if (status === 'Expired' || status === 'Revoked') {
    throw errors.validation(`body.status: ${status} is set by the service (expiry sweep or the revoke route), not by a client`);
  }
}

function assertFutureExpiry(expiresAt: string | null | undefined): void {
  if (expiresAt != null && Date.parse(expiresAt) <= Date.now()) throw errors.validation('body.expires_at must be in the future');
}

/** `0m` or `-2d` is refused as a past expires_at is: it would lift the punishment as it is issued. */
function assertPositiveDuration(duration: string | null | undefined): void {
  if (isEmptyDuration(duration)) throw errors.validation('body.duration must be a length of time above zero (30m, 12h, 7d, 2w) or a label');
}

/** 400 for a report that does not exist; 403 for a supervisor-flagged one below supervisor rank. */
async function assertCitableReport(tx: Tx, request: FastifyRequest, reportId: string): Promise<boolean> {
  const report = await findCitedReport(tx, reportId);
  if (!report) throw errors.validation(`body.report_id: report ${reportId} does not exist`);
  assertMaySeeReport(request, report);
  return report.is_supervisor;
}

/** Events of a punishment tied to a supervisor-flagged report are hidden like that report's own. */
async function citesSupervisorReport(tx: Tx, reportIds: (string | null)[]): Promise<boolean> {
  const ids = reportIds.filter((id): id is string => id !== null);
  if (ids.length === 0) return false;
  const { rows } = await tx.query<{ flagged: boolean }>('select coalesce(bool_or(is_supervisor), false) as flagged from reports where report_id = any($1::text[])', [ids]);
  return rows[0]!.flagged;
}

/** Issues a punishment; returns it as the caller sees it. */
export async function issuePunishment(request: FastifyRequest, body: CreatePunishmentBody): Promise<Punishment> {
  const agent = sessionAgent(request);
  // Its delivery would send the bot after the pseudonym, and its lookup with it.
  if (isPseudonym(body.user_id)) throw errors.pseudonymTarget('body.user_id', body.user_id);
  assertSettableStatus(body.status);
  assertFutureExpiry(body.expires_at);
  assertPositiveDuration(body.duration);
  // A duration such as 7d sets the expiry unless one is given; other durations are labels.
  const expiresAt = body.expires_at ?? (body.duration != null ? (expiryFromDuration(body.duration) ?? null) : null);
  const actor = actorOf(request);
  return request.environment.db.transaction(async (tx) => {
    const supervisor = body.report_id != null ? await assertCitableReport(tx, request, body.report_id) : false;
    const row = await insertPunishment(tx, { ...body, expires_at: expiresAt, issued_by: agent.chat_id, issued_by_name: agent.name });
    await recordAudit(tx, { actor, action: 'punishment.issued', target: row.punishment_id, reason: row.reason, after: row, correlationId: request.id });
    await recordEvent(tx, {
      type: 'punishment.issued',
      actor,
      correlationId: request.id,
      reportId: row.report_id,
      after: row,
      data: { punishment_id: row.punishment_id, user_id: row.user_id },
      isSupervisor: supervisor,
    });
    await enqueueIssueDeliveries(tx, request.principal, row, supervisor);
    return answerOf(tx, request, row.punishment_id);
  });
}

function sameValue(column: UpdatableColumn, current: string | null, next: string | null): boolean {
  // The same instant written another way (another offset, no milliseconds) is no change.
  if (column === 'expires_at' && current !== null && next !== null) return Date.parse(current) === Date.parse(next);
  return current === next;
}

/** Checks a PATCH body that needs no data: the status moves that belong elsewhere, a past expiry. */
export function assertUpdateBody(id: string, body: UpdatePunishmentBody): void {
  if (body.status === 'Revoked') throw errors.conflict(`Use POST /punishments/${id}/revoke to revoke a punishment`, 'USE_REVOKE');
  if (body.status === 'Expired') throw errors.conflict('Expired is set by the service once expires_at has passed', 'EXPIRY_IS_AUTOMATIC');
  assertFutureExpiry(body.expires_at);
}

/** Applies a PATCH (nothing is written when nothing changes); returns the punishment as the caller sees it. */
export async function updatePunishment(request: FastifyRequest, id: string, body: UpdatePunishmentBody): Promise<Punishment> {
  sessionAgent(request);
  assertPositiveDuration(body.duration);
  const actor = actorOf(request);
  return request.environment.db.transaction(async (tx) => {
    const current = await lockPunishment(tx, id);
    if (!current) throw punishmentNotFound(id);
    assertMaySeeReport(request, { is_supervisor: await punishmentFlagged(tx, id) });
    if (!IN_FORCE.has(current.status)) throw errors.conflict(`Punishment ${id} is ${current.status} and can no longer be changed`, 'PUNISHMENT_CLOSED');
    const wanted: PunishmentChanges = {};
    for (const field of EDITABLE_FIELDS) if (body[field] !== undefined) wanted[field] = body[field];
    // A new duration such as 7d counts from the issue, unless the body sets the expiry itself.
    const derived = body.duration != null && body.expires_at === undefined ? expiryFromDuration(body.duration, new Date(current.created_at)) : undefined;
    if (derived !== undefined) wanted.expires_at = derived;
    const changed = (Object.keys(wanted) as UpdatableColumn[]).filter((c) => !sameValue(c, current[c], wanted[c] ?? null));
    if (changed.length === 0) return answerOf(tx, request, id);
    if (changed.includes('report_id') && wanted.report_id != null) await assertCitableReport(tx, request, wanted.report_id);
    const updated = await updatePunishmentFields(tx, id, Object.fromEntries(changed.map((c) => [c, wanted[c] ?? null])));
    const before = Object.fromEntries(changed.map((c) => [c, current[c]]));
    const after = Object.fromEntries(changed.map((c) => [c, updated[c]]));
    await recordAudit(tx, { actor, action: 'punishment.updated', target: id, reason: body.reason, before, after, correlationId: request.id });
    await recordEvent(tx, {
      type: 'punishment.updated',
      actor,
      correlationId: request.id,
      reportId: await eventReportId(tx, id),
      before,
      after,
      data: { punishment_id: id, reason: body.reason },
      isSupervisor: await citesSupervisorReport(tx, [current.report_id, updated.report_id]),
    });
    // An expires_at moved into the past (a shorter duration) expires here, at once.
    return answerOf(tx, request, id);
  });
}

/** Revokes a punishment in force and enqueues the revoke delivery that lifts it on the chat platform. */
export async function revokeExisting(request: FastifyRequest, id: string, reason: string): Promise<Punishment> {
  const agent = sessionAgent(request);
  const actor = actorOf(request);
  return request.environment.db.transaction(async (tx) => {
    const current = await lockPunishment(tx, id);
    if (!current) throw punishmentNotFound(id);
    assertMaySeeReport(request, { is_supervisor: await punishmentFlagged(tx, id) });
    if (current.status === 'Revoked') throw errors.conflict(`Punishment ${id} is already revoked`, 'ALREADY_REVOKED');
    if (current.status === 'Expired') throw errors.conflict(`Punishment ${id} has already expired`, 'ALREADY_EXPIRED');
    const revoked = await revokePunishment(tx, id, agent.chat_id, reason);
    const before = { status: current.status };
    const after = { status: revoked.status, revoked_at: revoked.revoked_at, revoked_by: revoked.revoked_by };
    await recordAudit(tx, { actor, action: 'punishment.revoked', target: id, reason, before, after, correlationId: request.id });
    const delivery = await enqueueDelivery(tx, { kind: 'revoke', punishmentId: id, userId: revoked.user_id, requestedBy: agent.chat_id });
    await recordEvent(tx, {
      type: 'punishment.revoked',
      actor,
      correlationId: request.id,
      reportId: await eventReportId(tx, id),
      before,
      after,
      data: { punishment_id: id, user_id: revoked.user_id, reason, delivery_item_id: delivery.item_id },
      isSupervisor: await citesSupervisorReport(tx, [revoked.report_id]),
    });
    return answerOf(tx, request, id);
  });
}
