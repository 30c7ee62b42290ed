// The discipline delivery queue (spec: Punishments and discipline; States and transitions,
// Discipline delivery item): the bot's pickup, the dashboard's view of the queue, user lookups and
// requeues. The bot's completions are in completion.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isPseudonym } from '../platform/audit-chain/personal-fields.js';
import { recordAudit } from '../platform/audit.js';
import { assertMaySeeReport, punishmentFlagged } from '../platform/auth/report-access.js';
import { errors } from '../platform/errors.js';
import { recordEvent } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { expirePunishments } from '../punishments/expiry.js';
import { unlessIdle } from '../queue/idle.js';
import { sweepBeforePickup } from '../queue/sweep.js';
import { completionRoutes, deliveryEventBase } from './completion.js';
import { claimNextDelivery, deliveryWithPunishment, DELIVERY_STATUSES, listDeliveries, lockDelivery, type DeliveryRow, type DeliveryStatus } from './queries.js';
import { ItemParams, ItemResult, LookupBody, LookupResult, NothingDue, PendingQuery, PendingResult } from './schemas.js';

const tags = ['Discipline deliveries'];
const DEFAULT_STATUSES: readonly DeliveryStatus[] = ['pending', 'processing'];

function parseStatuses(list: string | undefined): readonly DeliveryStatus[] {
  const values = (list ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (values.length === 0) return DEFAULT_STATUSES;
  const bad = values.find((s) => !(DELIVERY_STATUSES as readonly string[]).includes(s));
  if (bad !== undefined) throw errors.validation(`querystring.status: "${bad}" is not a delivery status (one of: ${DELIVERY_STATUSES.join(', ')})`);
  return [...new Set(values)] as DeliveryStatus[];
}

export const disciplineRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/discipline/next',
    {
      config: { auth: 'key', changes: true },
      schema: {
        tags,
        operationId: 'claimNextDelivery',
        summary: 'Claim the oldest due delivery, after the expiry and stale sweeps; 204 when nothing is due',
        response: { 200: ItemResult, 204: NothingDue, ...errorResponses(...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const env = request.environment;
      const item = await unlessIdle(env, 'discipline', async () => {
        // Expiry first, so that a punishment lapsing now has its expire delivery in this very pickup.
        await expirePunishments(env, request.id);
        await sweepBeforePickup(env, 'discipline_deliveries', request.id);
        return claimNextDelivery(env.db);
      });
      // 204 carries no body: Fastify drops the payload for this status.
      if (!item) return reply.code(204).send(null);
      return { success: true as const, item };
    },
  );

  app.get(
    '/discipline/pending',
    {
      // Spec: "either", no permission named; punishments citing reports the caller may not see are placeholders.
      config: { auth: 'either' },
      schema: {
        tags,
        operationId: 'listDeliveries',
        summary: 'Delivery items by status (default pending and processing), oldest first, with their punishments',
        querystring: PendingQuery,
        response: { 200: PendingResult, ...errorResponses(400, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { status, limit = 200, offset = 0 } = request.query;
      const { count, items } = await listDeliveries(request.environment.db, request.principal, { statuses: parseStatuses(status), limit, offset });
      return { success: true as const, count, items };
    },
  );

  app.post(
    '/discipline/user-lookup',
    {
      config: { auth: 'session', permission: 'manage_punishments' },
      schema: {
        tags,
        operationId: 'requestUserLookup',
        summary: "Ask the bot to capture a user's chat profile; 409 while a lookup for that user is outstanding",
        body: LookupBody,
        response: { 201: LookupResult, ...errorResponses(400, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const userId = request.body.user_id;
      // A pseudonym names an erased person, never a chat account: the bot would look it up, and a
      // profile it stored under it would show with the erased person's cases (issue 39, review).
      if (isPseudonym(userId)) throw errors.pseudonymTarget('body.user_id', userId);
      const actor = actorOf(request);
      const lookup = await request.environment.db.transaction(async (tx) => {
        // The partial unique index decides between concurrent requests: the loser inserts nothing.
        const { rows } = await tx.query<DeliveryRow>(
          `insert into discipline_deliveries (kind, user_id, requested_by) values ('user_lookup', $1::text, $2::text)
           on conflict (user_id) where kind = 'user_lookup' and status in ('pending', 'processing') do nothing
           returning *`,
          [userId, actor.kind === 'agent' ? actor.chatId : null],
        );
        const item = rows[0];
        if (!item) throw errors.conflict(`A user lookup is already pending for ${userId}`, 'LOOKUP_PENDING');
        await recordAudit(tx, {
          actor,
          action: 'discipline.user_lookup_requested',
          target: userId,
          after: { item_id: item.item_id, kind: item.kind, status: item.status },
          correlationId: request.id,
        });
        return item;
      });
      return reply.code(201).send({ success: true as const, lookup: { ...lookup, punishment: null } });
    },
  );

  app.post(
    '/discipline/:item_id/requeue',
    {
      config: { auth: 'either', permission: 'manage_punishments' },
      schema: {
        tags,
        operationId: 'requeueDelivery',
        summary: 'Put a failed delivery back in the queue with a fresh retry budget',
        params: ItemParams,
        response: { 200: ItemResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = request.params.item_id;
      const db = request.environment.db;
      const item = await db.transaction(async (tx) => {
        const locked = await lockDelivery(tx, id);
        if (!locked) throw errors.deliveryNotFound(id);
        // Who may act on a punishment's delivery is who may act on the punishment (its PATCH and
        // revoke): decided from the flag of the report it cites as it is now, under the row's lock.
        if (locked.punishment_id !== null) assertMaySeeReport(request, { is_supervisor: await punishmentFlagged(tx, locked.punishment_id) });
        if (locked.status !== 'failed') throw errors.conflict(`Only a failed item can be requeued (status ${locked.status})`, 'NOT_FAILED');
        if (locked.kind === 'user_lookup') {
          // One outstanding lookup per user (a unique index): a newer one may have been asked for.
          const open = await tx.query(
            `select 1 from discipline_deliveries where kind = 'user_lookup' and user_id = $1::text and status in ('pending', 'processing')`,
            [locked.user_id],
          );
          if (open.rowCount > 0) throw errors.conflict(`A user lookup is already pending for ${locked.user_id}`, 'LOOKUP_PENDING');
        }
        await tx.query(
          `update discipline_deliveries set status = 'pending', attempts = 0, available_at = now(), claimed_at = null,
             completed_at = null, updated_at = now()
           where item_id = $1::bigint`,
          [id],
        );
        await recordEvent(tx, {
          ...(await deliveryEventBase(tx, request, locked)),
          type: 'delivery.requeued',
          before: { status: 'failed', attempts: locked.attempts },
          after: { status: 'pending', attempts: 0 },
          data: { item_id: id, kind: locked.kind, punishment_id: locked.punishment_id, last_error: locked.last_error },
        });
        // The answer as the same transaction sees it, not as a later flag or erasure left it.
        return deliveryWithPunishment(tx, request.principal, id);
      });
      if (!item) throw errors.deliveryNotFound(id);
      return { success: true as const, item };
    },
  );

  await app.register(completionRoutes);
};
