// Report actions (spec: Reports, "States and transitions" Report; targets in docs/decisions.md):
// each is one transaction under the report's row lock, so two agents acting at once are
// serialised and the second sees the first one's result (already claimed, status changed).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Queryable, Tx } from '../platform/db/types.js';
import { sessionAgent } from '../platform/auth/guards.js';
import type { Principal } from '../platform/auth/principal.js';
import { assertMayWorkOnReport, type ReportWork } from '../platform/auth/report-access.js';
import { errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { enqueueReportAction } from '../queue/queries.js';
import { ActionBody, ActionResult, ReportIdParams, ReportResult, type ReportAction } from './action-schemas.js';
import { addTimeline, findReport, loadFullReport, queueOf, touchReport, type FullReport, type ReportRow, type ReportStatus } from './queries.js';

const tags = ['Reports'];

/** The report under a row lock, once the caller may do this work on it; 404 when it does not exist. */
export async function lockReport(tx: Tx, request: FastifyRequest, reportId: string, work: ReportWork): Promise<ReportRow> {
  const report = await findReport(tx, reportId, { forUpdate: true });
  if (!report) throw errors.notFound(`Report ${reportId}`);
  assertMayWorkOnReport(request, report, work);
  return report;
}

/**
 * A write's answer: the report as a GET by the same principal would show it, read inside the
 * write's transaction, so a flag or an erasure committed just after cannot leak into it.
 */
export async function fullReport(tx: Queryable, principal: Principal | null, reportId: string): Promise<FullReport> {
  const report = await loadFullReport(tx, principal, reportId);
  if (!report) throw errors.notFound(`Report ${reportId}`);
  return report;
}

const statusChanged = () => errors.conflict('This action can no longer be performed because the case status changed', 'STATUS_CHANGED');
const DECIDED: ReadonlySet<ReportStatus> = new Set(['Validated', 'Invalidated']);

type Move = 'investigate' | 'validate' | 'invalidate';
const MOVES: Record<Move, { from: readonly ReportStatus[]; to: ReportStatus; timeline: string }> = {
  investigate: { from: ['Open', 'Pending', 'Appealed'], to: 'Under Investigation', timeline: 'Investigation started' },
  validate: { from: ['Under Investigation', 'Pending', 'Appealed'], to: 'Validated', timeline: 'Validated' },
  invalidate: { from: ['Under Investigation', 'Pending', 'Appealed'], to: 'Invalidated', timeline: 'Invalidated' },
};

/**
 * One action on a locked report: the state change, updated_at, timeline, event and the bot's
 * queue row. `withReason: false` leaves the reason out of the timeline text (investigation/begin).
 */
async function applyAction(tx: Tx, request: FastifyRequest, report: ReportRow, action: ReportAction, reason: string, withReason = true): Promise<void> {
  const actor = actorOf(request);
  const event = { actor, correlationId: request.id, reportId: report.report_id, isSupervisor: report.is_supervisor };
  const id = report.report_id;
  let payload: Record<string, unknown>;
  if (action === 'claim') {
    const agent = sessionAgent(request);
    if (report.assigned_agent !== null) throw errors.conflict('This case has already been claimed', 'ALREADY_CLAIMED');
    if (DECIDED.has(report.status)) throw statusChanged();
    await tx.query('update reports set assigned_agent = $2::text, updated_at = now() where report_id = $1::text', [id, agent.chat_id]);
    await addTimeline(tx, id, `Claimed by ${agent.name ?? agent.chat_id}`, actor);
    await recordEvent(tx, { ...event, type: 'report.assigned', before: { assigned_agent: null }, after: { assigned_agent: agent.chat_id }, data: { action, reason } });
    payload = { reason, assigned_agent: agent.chat_id, assigned_agent_name: agent.name };
  } else if (action === 'contact_reporter') {
    const opened = await tx.query('insert into contact_threads (report_id) values ($1::text) on conflict (report_id) do nothing returning report_id', [id]);
    if (opened.rowCount === 0) throw errors.conflict('A contact thread already exists for this case', 'DUPLICATE_CONTACT');
    const sender = actor.kind === 'agent' ? { chatId: actor.chatId, name: actor.name ?? null } : { chatId: null, name: 'Automation bot' };
    const { rows } = await tx.query<{ id: number }>(
      `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name)
       values ($1::text, 'to_reporter', $2::text, $3::text, $4::text) returning id`,
      [id, reason, sender.chatId, sender.name],
    );
    const messageId = rows[0]!.id;
    await touchReport(tx, id);
    await addTimeline(tx, id, 'Reporter contacted', actor);
    await recordEvent(tx, {
      ...event,
      type: 'contact.message_added',
      after: { message_id: messageId, direction: 'to_reporter', body: reason },
      data: { action, message_id: messageId },
    });
    payload = { reason, message_id: messageId, body: reason, reporter: report.reporter, thread_id: report.thread_id };
  } else {
    const move = MOVES[action];
    if (!move.from.includes(report.status)) throw statusChanged();
    // investigation_started_at marks an investigation in progress: set on entry, cleared on leaving.
    await tx.query(
      `update reports set status = $2::text, updated_at = now(),
         investigation_started_at = case when $2::text = 'Under Investigation' then now() else null end
       where report_id = $1::text`,
      [id, move.to],
    );
    await addTimeline(tx, id, withReason ? `${move.timeline}: ${reason}` : move.timeline, actor);
    await recordEvent(tx, { ...event, type: 'report.status_changed', before: { status: report.status }, after: { status: move.to }, data: { action, reason } });
    payload = { reason, status_before: report.status, status: move.to };
  }
  await enqueueReportAction(tx, {
    reportId: id,
    kind: action,
    queue: queueOf(report),
    payload,
    requestedBy: actor.kind === 'agent' ? actor.chatId : null,
  });
}

export const reportActionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/reports/:report_id/action',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: (body) => (body.action === 'claim' ? 'claim' : 'act') },
      schema: {
        tags,
        operationId: 'actOnReport',
        summary: 'Act on a report (validate, invalidate, investigate, contact_reporter, claim) and queue it for the bot',
        params: ReportIdParams,
        body: ActionBody,
        response: { 200: ActionResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { action, reason } = request.body;
      // Claiming assigns the signed-in agent: the bot has nobody to assign.
      if (action === 'claim') sessionAgent(request);
      const db = request.environment.db;
      const report = await db.transaction(async (tx) => {
        const locked = await lockReport(tx, request, request.params.report_id, action === 'claim' ? 'claim' : 'act');
        await applyAction(tx, request, locked, action, reason);
        return fullReport(tx, request.principal, locked.report_id);
      });
      return { success: true as const, action, queued: true as const, report };
    },
  );

  app.post(
    '/reports/:report_id/investigation/begin',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'act' },
      schema: {
        tags,
        operationId: 'beginInvestigation',
        summary: 'Start an investigation (the same as action investigate)',
        params: ReportIdParams,
        response: { 200: ReportResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const db = request.environment.db;
      const report = await db.transaction(async (tx) => {
        const locked = await lockReport(tx, request, request.params.report_id, 'act');
        await applyAction(tx, request, locked, 'investigate', 'Investigation started', false);
        return fullReport(tx, request.principal, locked.report_id);
      });
      return { success: true as const, report };
    },
  );

  app.post(
    '/reports/:report_id/investigation/end',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'act' },
      schema: {
        tags,
        operationId: 'endInvestigation',
        summary: 'Conclude the investigation in progress: Under Investigation to Pending, nothing queued',
        params: ReportIdParams,
        response: { 200: ReportResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const db = request.environment.db;
      const report = await db.transaction(async (tx) => {
        const locked = await lockReport(tx, request, request.params.report_id, 'act');
        if (locked.status !== 'Under Investigation') throw errors.conflict('No investigation is in progress', 'NO_INVESTIGATION');
        const id = locked.report_id;
        await tx.query(
          `update reports set status = 'Pending', investigation_started_at = null, updated_at = now() where report_id = $1::text`,
          [id],
        );
        const actor = actorOf(request);
        await addTimeline(tx, id, 'Investigation concluded', actor);
        await recordEvent(tx, {
          type: 'report.status_changed',
          actor,
          correlationId: request.id,
          reportId: id,
          before: { status: locked.status, investigation_started_at: locked.investigation_started_at },
          after: { status: 'Pending', investigation_started_at: null },
          data: { action: 'conclude' },
          isSupervisor: locked.is_supervisor,
        });
        return fullReport(tx, request.principal, id);
      });
      return { success: true as const, report };
    },
  );
};
