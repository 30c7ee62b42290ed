// Contact threads (spec: Contact threads; States and transitions, Contact thread). A thread is
// opened by the report action contact_reporter; here agents read it, reply and close it, and the
// bot relays the reporter's answers. Each change is one transaction under the report's row lock.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { assertMayWorkOnReport } from '../platform/auth/report-access.js';
import type { Tx } from '../platform/db/types.js';
import { AppError, errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { enqueueReportAction } from '../queue/queries.js';
import { addTimeline, findReport, queueOf, touchReport, type ReportRow } from '../reports/queries.js';
import { actorIdentity, addMessage, closeThread, findThread, loadThread, readThread, type ThreadRow } from './queries.js';
import { ReplyBody, ReportParams, RespondBody, ThreadResult } from './schemas.js';

const tags = ['Contact threads'];

const threadClosed = (message = 'The contact thread is closed') => errors.conflict(message, 'THREAD_CLOSED');

const noThread = (reportId: string) => new AppError(404, `No contact thread for report ${reportId}`, 'NOT_FOUND');

/**
 * The report and its thread, locked, with the session gates (report-access.ts, contact work:
 * supervisor rank for flagged reports, and the assigned agent only). The gates run before the
 * thread lookup so that a caller who may not act learns nothing about the thread.
 */
async function lockReportAndThread(tx: Tx, request: FastifyRequest, reportId: string, gated: boolean): Promise<{ report: ReportRow; thread: ThreadRow }> {
  const report = await findReport(tx, reportId, { forUpdate: true });
  if (!report) throw errors.notFound(`Report ${reportId}`);
  if (gated) assertMayWorkOnReport(request, report, 'contact');
  const thread = await findThread(tx, reportId, { forUpdate: true });
  if (!thread) throw noThread(reportId);
  return { report, thread };
}

const base = (request: FastifyRequest, report: ReportRow) => ({
  actor: actorOf(request),
  correlationId: request.id,
  reportId: report.report_id,
  isSupervisor: report.is_supervisor,
});

async function withReportLocked<T>(request: FastifyRequest, reportId: string, gated: boolean, fn: (tx: Tx, report: ReportRow, thread: ThreadRow) => Promise<T>): Promise<T> {
  return request.environment.db.transaction(async (tx) => {
    const { report, thread } = await lockReportAndThread(tx, request, reportId, gated);
    return fn(tx, report, thread);
  });
}

export const contactRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/reports/:report_id/contact',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'contact' },
      schema: { tags, operationId: 'getContactThread', summary: 'The contact thread of a report, messages oldest first', params: ReportParams, response: { 200: ThreadResult, ...errorResponses(400, 404, ...COMMON_ERRORS) } },
    },
    async (request) => {
      const reportId = request.params.report_id;
      // The gates decide from the report as the same statement read the thread (queries.ts readThread).
      const read = await readThread(request.environment.db, reportId);
      if (!read) throw errors.notFound(`Report ${reportId}`);
      assertMayWorkOnReport(request, read.report, 'contact');
      if (!read.thread) throw noThread(reportId);
      return { success: true as const, thread: read.thread };
    },
  );

  app.post(
    '/reports/:report_id/contact/reply',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'contact' },
      schema: {
        tags,
        operationId: 'replyToReporter',
        summary: 'Reply to the reporter: the bot delivers it as a direct message',
        params: ReportParams,
        body: ReplyBody,
        response: { 201: ThreadResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const thread = await withReportLocked(request, request.params.report_id, true, async (tx, report, row) => {
        if (row.closed) throw threadClosed();
        const actor = actorOf(request);
        const sender = actorIdentity(actor);
        const message = await addMessage(tx, { reportId: report.report_id, direction: 'to_reporter', body: request.body.body, senderChatId: sender.chatId, senderName: sender.name });
        await addTimeline(tx, report.report_id, 'Agent replied to the reporter', actor);
        await recordEvent(tx, { ...base(request, report), type: 'contact.message_added', data: { message_id: message.id, direction: message.direction } });
        await enqueueReportAction(tx, {
          reportId: report.report_id,
          kind: 'contact_message',
          queue: queueOf(report),
          payload: { body: message.body, message_id: message.id, thread_id: report.thread_id },
          requestedBy: sender.chatId,
        });
        await touchReport(tx, report.report_id);
        return loadThread(tx, row);
      });
      return reply.code(201).send({ success: true as const, thread });
    },
  );

  app.post(
    '/reports/:report_id/contact/close',
    {
      config: { auth: 'either', permission: 'manage_dockets', report: 'contact' },
      schema: { tags, operationId: 'closeContactThread', summary: 'Close the contact thread; the bot is told through a contact_closed action', params: ReportParams, response: { 200: ThreadResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) } },
    },
    async (request) => {
      const thread = await withReportLocked(request, request.params.report_id, true, async (tx, report, row) => {
        if (row.closed) throw threadClosed('The contact thread is already closed');
        const actor = actorOf(request);
        const closed = await closeThread(tx, report.report_id, actor);
        await addTimeline(tx, report.report_id, 'Contact thread closed', actor);
        await recordEvent(tx, {
          ...base(request, report),
          type: 'contact.thread_closed',
          before: { closed: false },
          after: { closed: true, closed_at: closed.closed_at, closed_by: closed.closed_by, closed_by_name: closed.closed_by_name },
        });
        await enqueueReportAction(tx, {
          reportId: report.report_id,
          kind: 'contact_closed',
          queue: queueOf(report),
          payload: { thread_id: report.thread_id },
          requestedBy: closed.closed_by,
        });
        await touchReport(tx, report.report_id);
        return loadThread(tx, closed);
      });
      return { success: true as const, thread };
    },
  );

  app.post(
    '/reports/:report_id/contact/respond',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        operationId: 'relayReporterMessage',
        summary: "The bot relays the reporter's message into the thread",
        params: ReportParams,
        body: RespondBody,
        response: { 201: ThreadResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const thread = await withReportLocked(request, request.params.report_id, false, async (tx, report, row) => {
        if (row.closed) throw threadClosed();
        const message = await addMessage(tx, { reportId: report.report_id, direction: 'from_reporter', body: request.body.body, senderChatId: null, senderName: request.body.sender_name });
        await addTimeline(tx, report.report_id, 'Reporter responded', actorOf(request));
        await recordEvent(tx, { ...base(request, report), type: 'contact.message_added', data: { message_id: message.id, direction: message.direction } });
        await touchReport(tx, report.report_id);
        return loadThread(tx, row);
      });
      return reply.code(201).send({ success: true as const, thread });
    },
  );
};
