// The bot reports back on discipline deliveries (spec: States and transitions, Discipline delivery
// item; DESIGN.md on retry_after_seconds). Each report is one transaction under the item's row lock,
// so two completions of one item are serialised and the second finds it already completed.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { punishmentFlaggedSql, punishmentReportIdSql } from '../platform/auth/report-access.js';
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import { recordEvent, type EventInput } from '../platform/events.js';
import { actorOf } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { RETRY_CAP } from '../queue/sweep.js';
import { upsertChatProfile } from '../reports/queries.js';
import { ChatProfileInput } from '../reports/schemas.js';
import { deliveryWithPunishment, lockDelivery, TERMINAL_DELIVERY_STATUSES, type DeliveryRow } from './queries.js';
import { CompleteBody, ItemParams, ItemResult, ProfileResult } from './schemas.js';

const tags = ['Discipline deliveries'];

/**
 * What an event about an item carries in common: its punishment's report, if any (a deleted one's
 * id too), and that report's flag now (a record: who may read the event is decided from the
 * report when it is read).
 */
export async function deliveryEventBase(
  tx: Tx,
  request: FastifyRequest,
  item: DeliveryRow,
): Promise<Pick<EventInput, 'actor' | 'correlationId' | 'reportId' | 'isSupervisor'>> {
  let cited: { report_id: string | null; is_supervisor: boolean } | undefined;
  if (item.punishment_id !== null) {
    const { rows } = await tx.query<{ report_id: string | null; is_supervisor: boolean }>(
      `select ${punishmentReportIdSql('p')} as report_id, ${punishmentFlaggedSql('p')} as is_supervisor
       from punishments p where p.punishment_id = $1::text`,
      [item.punishment_id],
      { name: 'punishment_report' },
    );
    cited = rows[0];
  }
  return { actor: actorOf(request), correlationId: request.id, reportId: cited?.report_id ?? null, isSupervisor: cited?.is_supervisor ?? false };
}

type Outcome = { to: 'success' } | { to: 'failed'; capReached: boolean } | { to: 'pending'; retryAfterSeconds: number };

/**
 * A failure with a pause is transient: back to pending, paced, unless the item has already been
 * handed out RETRY_CAP times, where the sweep would fail it anyway, so it fails here for good.
 */
function outcomeOf(body: CompleteBody, attempts: number): Outcome {
  if (body.result === 'success') return { to: 'success' };
  const pause = body.retry_after_seconds ?? 0;
  if (pause <= 0) return { to: 'failed', capReached: false };
  return attempts < RETRY_CAP ? { to: 'pending', retryAfterSeconds: pause } : { to: 'failed', capReached: true };
}

async function applyOutcome(tx: Tx, itemId: number, outcome: Outcome, note: string | null, ref: string | null): Promise<DeliveryRow> {
  const { rows } =
    outcome.to === 'pending'
      ? await tx.query<DeliveryRow>(
          `update discipline_deliveries set status = 'pending', last_error = $2::text, claimed_at = null,
             available_at = now() + make_interval(secs => $3::double precision), updated_at = now()
           where item_id = $1::bigint returning *`,
          [itemId, note, outcome.retryAfterSeconds],
          { name: 'pace_delivery' },
        )
      : await tx.query<DeliveryRow>(
          `update discipline_deliveries set status = $2::text, result_note = $3::text, ref = $4::text,
             last_error = case when $2::text = 'failed' then $3::text else last_error end,
             completed_at = now(), updated_at = now()
           where item_id = $1::bigint returning *`,
          [itemId, outcome.to, note, ref],
          { name: 'finish_delivery' },
        );
  return rows[0]!;
}

export const completionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/discipline/:item_id/complete',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        operationId: 'completeDelivery',
        summary: 'The bot reports a delivery: success, failed, or failed with retry_after_seconds (a paced retry)',
        params: ItemParams,
        body: CompleteBody,
        response: { 200: ItemResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = request.params.item_id;
      const body = request.body;
      if (body.result === 'success' && (body.retry_after_seconds ?? 0) > 0) {
        throw errors.validation('body.retry_after_seconds applies only to result failed');
      }
      const note = body.note ?? null;
      const ref = body.ref ?? null;
      const db = request.environment.db;
      const answer = await db.transaction(async (tx) => {
        const locked = await lockDelivery(tx, id);
        if (!locked) throw errors.deliveryNotFound(id);
        // A pending item is accepted: the bot may finish after the sweep requeued its claim.
        if (TERMINAL_DELIVERY_STATUSES.has(locked.status)) throw errors.disciplineAlreadyCompleted(id, locked.status);
        const outcome = outcomeOf(body, locked.attempts);
        const item = await applyOutcome(tx, id, outcome, note, ref);
        const data: Record<string, unknown> = { item_id: item.item_id, kind: item.kind, punishment_id: item.punishment_id, note, ref };
        let type: EventInput['type'];
        let after: Record<string, unknown>;
        if (outcome.to === 'pending') {
          type = 'delivery.requeued';
          after = { status: item.status, attempts: item.attempts, available_at: item.available_at };
          Object.assign(data, { retry_after_seconds: outcome.retryAfterSeconds, available_at: item.available_at, transient: true });
        } else {
          type = outcome.to === 'success' ? 'delivery.completed' : 'delivery.failed';
          after = { status: item.status, attempts: item.attempts, completed_at: item.completed_at };
          if (outcome.to === 'failed' && outcome.capReached) {
            Object.assign(data, { retry_after_seconds: body.retry_after_seconds, retry_cap_reached: true });
          }
        }
        await recordEvent(tx, { ...(await deliveryEventBase(tx, request, locked)), type, before: { status: locked.status }, after, data });
        // The answer as this transaction leaves the item, not as a later requeue or erasure left it.
        return deliveryWithPunishment(tx, request.principal, id);
      });
      if (!answer) throw errors.deliveryNotFound(id);
      return { success: true as const, item: answer };
    },
  );

  app.post(
    '/discipline/user-lookup/:item_id/profile',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        operationId: 'completeUserLookup',
        summary: "The bot delivers a looked-up user's profile: stored, and the lookup completed (idempotent)",
        params: ItemParams,
        body: ChatProfileInput,
        response: { 200: ProfileResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = request.params.item_id;
      const body = request.body;
      const profile = await request.environment.db.transaction(async (tx) => {
        const locked = await lockDelivery(tx, id);
        if (!locked || locked.kind !== 'user_lookup') throw errors.deliveryNotFound(id);
        // Over first: a lookup an erasure cancelled names the pseudonym now, not the chat id the bot was given.
        if (locked.status === 'failed' || locked.status === 'cancelled') throw errors.disciplineAlreadyCompleted(id, locked.status);
        if (body.chat_id !== locked.user_id) throw errors.validation(`body.chat_id must match the lookup target ${locked.user_id}`);
        const stored = await upsertChatProfile(tx, body);
        // A retry after a lost answer refreshes the profile; the lookup was already completed once.
        if (locked.status === 'success') return stored;
        await tx.query(
          `update discipline_deliveries set status = 'success', result_note = 'Profile captured', completed_at = now(), updated_at = now()
           where item_id = $1::bigint`,
          [id],
        );
        await recordEvent(tx, {
          ...(await deliveryEventBase(tx, request, locked)),
          type: 'delivery.completed',
          before: { status: locked.status },
          after: { status: 'success' },
          data: { item_id: id, kind: 'user_lookup', user_id: locked.user_id },
        });
        return stored;
      });
      return { success: true as const, profile };
    },
  );
};
