// The discipline delivery queue (spec: States and transitions, Discipline delivery item). Items are
// enqueued in the transaction of the change that asks for them; the bot claims them with
// `for update skip locked`, after the shared stale sweep (queue/sweep.ts).
import type { Queryable, Tx } from '../platform/db/types.js';
import { punishmentJson, type PunishmentRow } from '../punishments/queries.js';

export const DELIVERY_KINDS = ['issue', 'revoke', 'expire', 'user_lookup'] as const;
export type DeliveryKind = (typeof DELIVERY_KINDS)[number];
export const DELIVERY_STATUSES = ['pending', 'processing', 'success', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export const TERMINAL_DELIVERY_STATUSES: ReadonlySet<DeliveryStatus> = new Set(['success', 'failed', 'cancelled']);

export interface DeliveryRow {
  item_id: number;
  kind: DeliveryKind;
  punishment_id: string | null;
  user_id: string;
  /** Where the bot delivers: `chat`, the chat platform (the only surface so far). */
  surface: 'chat';
  status: DeliveryStatus;
  attempts: number;
  available_at: string;
  result_note: string | null;
  last_error: string | null;
  ref: string | null;
  requested_by: string | null;
  claimed_at: string | null;
  completed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** An item as the routes answer it: with the live punishment row (null for a user_lookup). */
export interface Delivery extends DeliveryRow {
  punishment: PunishmentRow | null;
}

export interface NewDelivery {
  kind: DeliveryKind;
  punishmentId?: string | null;
  userId: string;
  requestedBy?: string | null;
}

export async function enqueueDelivery(tx: Tx, item: NewDelivery): Promise<DeliveryRow> {
  const { rows } = await tx.query<DeliveryRow>(
    `insert into discipline_deliveries (kind, punishment_id, user_id, requested_by)
     values ($1::text, $2::text, $3::text, $4::text) returning *`,
    [item.kind, item.punishmentId ?? null, item.userId, item.requestedBy ?? null],
  );
  return rows[0]!;
}

const WITH_PUNISHMENT = `select d.*, case when p.punishment_id is null then null else ${punishmentJson('p')} end as punishment`;

/** Claims the oldest item that is due (a paced retry waits for its available_at), skipping locked rows. */
export async function claimNextDelivery(db: Queryable): Promise<Delivery | undefined> {
  const { rows } = await db.query<Delivery>(
    `with claimed as (
       update discipline_deliveries set status = 'processing', attempts = attempts + 1, claimed_at = now(), updated_at = now()
       where item_id = (
         select item_id from discipline_deliveries
         where status = 'pending' and available_at <= now()
         order by available_at, item_id limit 1
         for update skip locked)
       returning *)
     ${WITH_PUNISHMENT} from claimed d left join punishments p on p.punishment_id = d.punishment_id`,
    [],
    { name: 'claim_delivery' },
  );
  return rows[0];
}

export async function deliveryWithPunishment(db: Queryable, itemId: number): Promise<Delivery | undefined> {
  const { rows } = await db.query<Delivery>(
    `${WITH_PUNISHMENT} from discipline_deliveries d left join punishments p on p.punishment_id = d.punishment_id
     where d.item_id = $1::bigint`,
    [itemId],
    { name: 'delivery_with_punishment' },
  );
  return rows[0];
}

export async function lockDelivery(tx: Tx, itemId: number): Promise<DeliveryRow | undefined> {
  const { rows } = await tx.query<DeliveryRow>('select * from discipline_deliveries where item_id = $1::bigint for update', [itemId], { name: 'lock_delivery' });
  return rows[0];
}

/** Items in the given statuses, oldest first, with their live punishments, and the total. */
export async function listDeliveries(
  db: Queryable,
  options: { statuses: readonly string[]; limit: number; offset?: number },
): Promise<{ count: number; items: Delivery[] }> {
  const [page, total] = await Promise.all([
    db.query<Delivery>(
      `${WITH_PUNISHMENT} from discipline_deliveries d left join punishments p on p.punishment_id = d.punishment_id
       where d.status = any($1::text[]) order by d.created_at, d.item_id limit $2::int offset $3::int`,
      [options.statuses, options.limit, options.offset ?? 0],
    ),
    db.query<{ count: number }>('select count(*)::int as count from discipline_deliveries where status = any($1::text[])', [options.statuses]),
  ]);
  return { count: total.rows[0]!.count, items: page.rows };
}

/** Issue flow: the delivery, and a user_lookup when no profile of the user is on record yet. */
export async function enqueueIssueDeliveries(tx: Tx, punishment: PunishmentRow, requestedBy: string | null): Promise<void> {
  await enqueueDelivery(tx, { kind: 'issue', punishmentId: punishment.punishment_id, userId: punishment.user_id, requestedBy });
  await tx.query(
    `insert into discipline_deliveries (kind, user_id, requested_by)
     select 'user_lookup', $1::text, $2::text where not exists (select 1 from chat_profiles where chat_id = $1::text)
     on conflict (user_id) where kind = 'user_lookup' and status in ('pending', 'processing') do nothing`,
    [punishment.user_id, requestedBy],
  );
}
