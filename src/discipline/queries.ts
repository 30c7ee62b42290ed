// The discipline delivery queue (spec: States and transitions, Discipline delivery item). Items are
// enqueued in the transaction of the change that asks for them; the bot claims them with
// `for update skip locked`, after the shared stale sweep (queue/sweep.ts).
import { maySeeReport, profileVisibleToSql, punishmentFlaggedSql, seesLookupPerson } from '../platform/auth/report-access.js';
import type { Queryable, Tx } from '../platform/db/types.js';
import type { Principal } from '../platform/auth/principal.js';
import { punishmentJson, restrictedPunishment, type PunishmentRow, type RestrictedPunishment } from '../punishments/queries.js';

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
export interface Delivery extends Omit<DeliveryRow, 'user_id'> {
  /** The punished or looked-up person; null on a restricted item. */
  user_id: string | null;
  punishment: PunishmentRow | RestrictedPunishment | null;
  /** Its punishment cites a supervisor-flagged report the caller may not see: no texts are shown. */
  restricted?: true;
}

type DeliveryRead = Delivery & { report_flagged: boolean };

/**
 * The item's person, the bot's texts about them and who asked for it withheld: a placeholder's
 * fields (docs/access.md; the punishment placeholder does not say who issued it either).
 */
const withheld = { user_id: null, result_note: null, last_error: null, ref: null, requested_by: null, restricted: true } as const;

/**
 * An item as this caller may see it (report-access.ts). A delivery of a punishment is decided by
 * its cited report's current flag. A lookup cites no report, yet the issue of a punishment citing
 * a flagged one enqueues a lookup of the same person in the same transaction (next to the
 * restricted delivery, by the same requester): below supervisor rank a lookup's person is shown
 * only to the agent who asked for it, whoever the person is. Deciding by the person (a party of
 * a flagged report or not) would itself answer that question.
 */
function shownDelivery(principal: Principal | null, row: DeliveryRead): Delivery {
  const { report_flagged, ...item } = row;
  if (item.punishment === null) return seesLookupPerson(principal, item.requested_by) ? item : { ...item, ...withheld };
  if (maySeeReport(principal, { is_supervisor: report_flagged })) return item;
  // Nothing of the report or its parties: the punished person's chat id goes with the texts.
  return { ...item, ...withheld, punishment: restrictedPunishment(item.punishment as PunishmentRow) };
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

const WITH_PUNISHMENT = `select d.*, case when p.punishment_id is null then null else ${punishmentJson('p')} end as punishment,
  ${punishmentFlaggedSql('p')} as report_flagged`;

/** Claims the oldest item that is due (a paced retry waits for its available_at), skipping locked rows. */
export async function claimNextDelivery(db: Queryable): Promise<Delivery | undefined> {
  const { rows } = await db.query<DeliveryRead>(
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
  // Only the bot's key claims: it sees every report.
  return rows[0] && shownDelivery({ kind: 'key' }, rows[0]);
}

export async function deliveryWithPunishment(db: Queryable, principal: Principal | null, itemId: number): Promise<Delivery | undefined> {
  const { rows } = await db.query<DeliveryRead>(
    `${WITH_PUNISHMENT} from discipline_deliveries d left join punishments p on p.punishment_id = d.punishment_id
     where d.item_id = $1::bigint`,
    [itemId],
    { name: 'delivery_with_punishment' },
  );
  return rows[0] && shownDelivery(principal, rows[0]);
}

export async function lockDelivery(tx: Tx, itemId: number): Promise<DeliveryRow | undefined> {
  const { rows } = await tx.query<DeliveryRow>('select * from discipline_deliveries where item_id = $1::bigint for update', [itemId], { name: 'lock_delivery' });
  return rows[0];
}

/** Items in the given statuses, oldest first, with their live punishments, and the total. */
export async function listDeliveries(
  db: Queryable,
  principal: Principal | null,
  options: { statuses: readonly string[]; limit: number; offset?: number },
): Promise<{ count: number; items: Delivery[] }> {
  const [page, total] = await Promise.all([
    db.query<DeliveryRead>(
      `${WITH_PUNISHMENT} from discipline_deliveries d left join punishments p on p.punishment_id = d.punishment_id
       where d.status = any($1::text[]) order by d.created_at, d.item_id limit $2::int offset $3::int`,
      [options.statuses, options.limit, options.offset ?? 0],
    ),
    db.query<{ count: number }>('select count(*)::int as count from discipline_deliveries where status = any($1::text[])', [options.statuses]),
  ]);
  return { count: total.rows[0]!.count, items: page.rows.map((row) => shownDelivery(principal, row)) };
}

/**
 * Issue flow: the delivery, and a user_lookup when no profile of the user is on record as far as
 * the issuer can tell: one withheld from them (a flagged report's party's) counts as none, or the
 * lookup's absence would say what the answer's `profile: null` does not. A punishment citing a
 * flagged report enqueues no lookup: a lookup cites no report, so it, its events and the
 * one-open-lookup 409 would name the person to everyone (docs/decisions.md).
 */
export async function enqueueIssueDeliveries(tx: Tx, principal: Principal | null, punishment: PunishmentRow, citesFlagged: boolean): Promise<void> {
  const requestedBy = principal?.kind === 'session' ? principal.agent.chat_id : null;
  await enqueueDelivery(tx, { kind: 'issue', punishmentId: punishment.punishment_id, userId: punishment.user_id, requestedBy });
  if (citesFlagged) return;
  await tx.query(
    `insert into discipline_deliveries (kind, user_id, requested_by)
     select 'user_lookup', $1::text, $2::text
     where not exists (select 1 from chat_profiles where chat_id = $1::text and ${profileVisibleToSql(principal, 'chat_profiles.chat_id')})
     on conflict (user_id) where kind = 'user_lookup' and status in ('pending', 'processing') do nothing`,
    [punishment.user_id, requestedBy],
  );
}
