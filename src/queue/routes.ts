// The bot's report action queues (spec: Report action queues; States and transitions, Report queue
// action). Pickup is one claiming statement after the stale sweep; completion and requeue are one
// transaction each under the action's row lock, so two callers on one action are serialised and
// the second sees the first one's result.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SUPERVISOR_QUEUE_RANK } from '../platform/auth/report-access.js';
import type { Queryable } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import {
  ACTION_STATUSES,
  readAction,
  claimNextAction,
  completeAction,
  listActions,
  parseActionStatuses,
  type QueuedAction,
  type QueueName,
} from './queries.js';
import { ActionList, ActionParams, ActionResult, CompleteBody, NothingPending, QueueListQuery } from './schemas.js';
import { unlessIdle } from './idle.js';
import { requeueFailedAction } from './requeue.js';
import { sweepBeforePickup } from './sweep.js';

const tags = ['Report action queues'];
/** Spec Limits: GET /actions/pending returns at most 50 rows. */
const BOT_PENDING_LIMIT = 50;

export const actionQueueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/actions/pending',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        operationId: 'listPendingActions',
        summary: 'Pending and processing actions of both queues, oldest first, at most 50',
        response: { 200: ActionList, ...errorResponses(...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { count, actions } = await listActions(request.environment.db, request.principal, { statuses: ['pending', 'processing'], limit: BOT_PENDING_LIMIT });
      return { success: true as const, count, actions };
    },
  );

  const pickup = async (request: FastifyRequest, reply: FastifyReply, queue: QueueName | undefined) => {
    const env = request.environment;
    const action = await unlessIdle(env, queue ? `actions:${queue}` : 'actions', async () => {
      await sweepBeforePickup(env, 'report_actions', request.id);
      return claimNextAction(env.db, queue);
    });
    if (!action) return reply.code(204).send();
    return { success: true as const, action };
  };
  const pickups: Array<[string, QueueName | undefined, string, string]> = [
    ['/actions/next', undefined, 'claimNextAction', 'Claim the oldest pending action of either queue'],
    ['/actions/next/operator', 'operator', 'claimNextOperatorAction', 'Claim the oldest pending action on a non-supervisor report'],
    ['/actions/next/supervisor', 'supervisor', 'claimNextSupervisorAction', 'Claim the oldest pending action on a supervisor report'],
  ];
  for (const [url, queue, operationId, summary] of pickups) {
    app.get(
      url,
      {
        config: { auth: 'key', changes: true },
        schema: {
          tags,
          operationId,
          summary,
          description: 'Runs the stale sweep first. The claimed action is processing with one more attempt; 204 with an empty body when nothing is pending.',
          response: { 200: ActionResult, 204: NothingPending, ...errorResponses(...COMMON_ERRORS) },
        },
      },
      (request, reply) => pickup(request, reply, queue),
    );
  }

  for (const [queue, operationId] of [['operator', 'listOperatorActions'], ['supervisor', 'listSupervisorActions']] as const) {
    app.get(
      `/actions/pending/${queue}`,
      {
        // Spec Authentication 6: sessions need Senior Agent rank for the supervisor list.
        // Spec: "either", no permission named; what a list shows follows the visibility model.
        config: { auth: 'either', ...(queue === 'supervisor' ? { rank: SUPERVISOR_QUEUE_RANK } : {}) },
        schema: {
          tags,
          operationId,
          summary: `Actions of the ${queue} queue with their failure metadata, oldest first`,
          description: queue === 'supervisor' ? 'Sessions need Senior Agent rank.' : undefined,
          querystring: QueueListQuery,
          response: { 200: ActionList, ...errorResponses(400, ...COMMON_ERRORS) },
        },
      },
      async (request) => {
        const query = request.query;
        const { count, actions } = await listActions(request.environment.db, request.principal, {
          queue,
          statuses: parseActionStatuses(query.status ?? 'pending,processing'),
          limit: query.limit ?? 200,
          offset: query.offset ?? 0,
        });
        return { success: true as const, count, actions };
      },
    );
  }

  app.post(
    '/actions/:action_id/complete',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        operationId: 'completeAction',
        summary: 'The bot reports the outcome of an action it claimed',
        params: ActionParams,
        body: CompleteBody,
        response: { 200: ActionResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = request.params.action_id;
      const env = request.environment;
      const completed = await completeAction(env.db, { actionId: id, result: request.body.result, note: request.body.note ?? null, correlationId: request.id });
      if (completed.outcome === 'not_found') throw errors.actionNotFound(id);
      if (completed.outcome === 'already_completed') throw errors.actionAlreadyCompleted(id, completed.status);
      return { success: true as const, action: completed.action };
    },
  );

  app.post(
    '/actions/:action_id/requeue',
    {
      config: { auth: 'either', permission: 'manage_dockets' },
      schema: {
        tags,
        operationId: 'requeueAction',
        summary: 'Put a failed action back to pending with a fresh retry budget',
        description: 'Sessions need Senior Agent rank for an action of the supervisor queue.',
        params: ActionParams,
        response: { 200: ActionResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = request.params.action_id;
      const db = request.environment.db;
      // The answer is read inside the transaction: what the requeue left, not what a later change did.
      return db.transaction(async (tx) => {
        await requeueFailedAction(tx, request, id);
        return { success: true as const, action: await readAction(tx, request.principal, id) };
      });
    },
  );
};
