// Queue control (spec: System administration; States and transitions, Report queue action): the
// report action queue with report basics, requeue of a failed action, cancel of a pending or
// processing one, and the stale sweep on demand. Each mutation is one transaction with its
// admin audit row and event (trail.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { assertMayWorkQueue } from '../platform/auth/report-access.js';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses, pageOffset } from '../platform/http/schemas.js';
import type { FastifyRequest } from 'fastify';
import { readAction, cancelAction, listActions, lockAction, parseActionStatuses, type QueuedAction, type ReportActionRow } from '../queue/queries.js';
import { currentQueue, requeueFailedAction } from '../queue/requeue.js';
import { Action, ActionParams } from '../queue/schemas.js';
import { sweepStale, SWEEP_BATCH, type SweepResult, type SweptQueue } from '../queue/sweep.js';
import type { Queryable, Tx } from '../platform/db/types.js';
import { CorrelationId, ReasonBody } from './schemas.js';
import { lockAdmins, recordAdminChange } from './trail.js';

const tags = ['Administration'];
/** Spec Limits: GET /admin/queue answers at most 200 rows. */
const ADMIN_QUEUE_LIMIT = 200;
const DEFAULT_STATUSES = 'pending,processing,failed';

const AdminQueueQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ maxLength: 200, default: DEFAULT_STATUSES, description: 'Comma list of pending, processing, success, failed, cancelled' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ADMIN_QUEUE_LIMIT, default: ADMIN_QUEUE_LIMIT })),
    offset: Type.Optional(pageOffset({ default: 0 })),
  },
  { additionalProperties: false },
);

const AdminQueueList = Type.Object({
  success: Type.Literal(true),
  count: Type.Integer({ description: 'How many actions match in all (may exceed the page)' }),
  actions: Type.Array(Action, { description: 'Oldest first (queue order), with report basics' }),
});

const AdminActionResult = Type.Object({ success: Type.Literal(true), action: Action, correlation_id: CorrelationId });

const SweptIds = Type.Object({ report_actions: Type.Array(Type.Integer()), discipline_deliveries: Type.Array(Type.Integer()) });
const SweepAnswer = Type.Object({
  success: Type.Literal(true),
  requeued: SweptIds,
  failed: SweptIds,
  correlation_id: CorrelationId,
});

/** Sweeps one queue batch after batch until nothing stale is left (a pickup sweeps one batch). */
async function sweepAll(tx: Tx, table: SweptQueue, timeoutMs: number, correlationId: string): Promise<SweepResult> {
  const total: SweepResult = { requeued: [], failed: [] };
  for (;;) {
    const batch = await sweepStale(tx, table, { timeoutMs, correlationId });
    total.requeued.push(...batch.requeued);
    total.failed.push(...batch.failed);
    if (batch.requeued.length + batch.failed.length < SWEEP_BATCH) return total;
  }
}

export const adminQueueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/queue',
    {
      config: { auth: 'session', admin: 'admin_queue' },
      schema: {
        tags,
        operationId: 'listQueueActions',
        summary: 'Report queue actions with report basics (default pending, processing and failed), at most 200',
        querystring: AdminQueueQuery,
        response: { 200: AdminQueueList, ...errorResponses(400, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { status, limit, offset } = request.query;
      const page = await listActions(request.environment.db, request.principal, {
        statuses: parseActionStatuses(status ?? DEFAULT_STATUSES),
        limit: limit ?? ADMIN_QUEUE_LIMIT,
        offset: offset ?? 0,
      });
      return { success: true as const, ...page };
    },
  );

  /** One action moved by an admin: the move on the locked row, then its trail, then the action as it now is. */
  const actionChange = (
    path: 'requeue' | 'cancel',
    operationId: string,
    summary: string,
    action: 'admin.queue_requeued' | 'admin.queue_cancelled',
    move: (tx: Tx, request: FastifyRequest, id: number, reason: string) => Promise<{ before: ReportActionRow; after: ReportActionRow }>,
  ) =>
    app.post(
      `/admin/queue/:action_id/${path}`,
      {
        config: { auth: 'session', admin: 'admin_queue' },
        schema: { tags, operationId, summary, params: ActionParams, body: ReasonBody, response: { 200: AdminActionResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) } },
      },
      async (request) => {
        const id = request.params.action_id;
        const { reason } = request.body;
        const db = request.environment.db;
        // The answer is read inside the transaction: what the move left, not what a later change did.
        return db.transaction(async (tx) => {
          await lockAdmins(tx, request, 'admin_queue');
          const { before, after } = await move(tx, request, id, reason);
          const correlationId = await recordAdminChange(tx, request, {
            action,
            target: String(id),
            reason,
            before: { status: before.status, attempts: before.attempts },
            after: { status: after.status, attempts: after.attempts },
            data: { action_id: id, kind: before.kind, queue: before.queue },
            reportId: before.report_id,
            isSupervisor: before.queue === 'supervisor',
          });
          return { success: true as const, action: await readAction(tx, request.principal, id), correlation_id: correlationId };
        });
      },
    );

  actionChange('requeue', 'requeueActionAsAdmin', 'Put a failed action back to pending with a fresh retry budget (409 unless failed)', 'admin.queue_requeued', (tx, request, id) =>
    requeueFailedAction(tx, request, id),
  );

  actionChange(
    'cancel',
    'cancelAction',
    'Cancel a pending or processing action (state cancelled; 409 otherwise); the bot completing it then gets 409 ACTION_ALREADY_COMPLETED',
    'admin.queue_cancelled',
    async (tx, request, id, reason) => {
      const locked = await lockAction(tx, id);
      if (!locked) throw errors.actionNotFound(id);
      const before = { ...locked, queue: await currentQueue(tx, locked) };
      assertMayWorkQueue(request, before.queue);
      if (before.status !== 'pending' && before.status !== 'processing') {
        throw errors.conflict(`Only a pending or processing action can be cancelled (status ${before.status})`, 'NOT_CANCELLABLE');
      }
      return { before, after: await cancelAction(tx, id, reason) };
    },
  );

  app.post(
    '/admin/queue/sweep',
    {
      config: { auth: 'session', admin: 'admin_queue' },
      schema: {
        tags,
        operationId: 'sweepQueues',
        summary: 'Run the stale sweep of both bot queues now: requeue items past the timeout, fail those past the retry cap',
        body: ReasonBody,
        response: { 200: SweepAnswer, ...errorResponses(400, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const env = request.environment;
      const result = await env.db.transaction(async (tx) => {
        await lockAdmins(tx, request, 'admin_queue');
        const actions = await sweepAll(tx, 'report_actions', env.staleTimeoutMs, request.id);
        const deliveries = await sweepAll(tx, 'discipline_deliveries', env.staleTimeoutMs, request.id);
        const requeued = { report_actions: actions.requeued, discipline_deliveries: deliveries.requeued };
        const failed = { report_actions: actions.failed, discipline_deliveries: deliveries.failed };
        const correlationId = await recordAdminChange(tx, request, {
          action: 'admin.queue_swept',
          target: null,
          reason: request.body.reason,
          after: { requeued, failed },
          data: { stale_timeout_seconds: env.staleTimeoutMs / 1000 },
        });
        return { requeued, failed, correlation_id: correlationId };
      });
      return { success: true as const, ...result };
    },
  );
};
