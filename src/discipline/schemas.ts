// The discipline delivery routes (spec: Punishments and discipline; States and transitions,
// Discipline delivery item). Bodies are strict; the profile body is the shared chat profile object.
import { Type, type Static } from 'typebox';
import { ChatId } from '../agents/schemas.js';
import { nullableString, nullableTimestamp, stringEnum, timestamp, pageOffset } from '../platform/http/schemas.js';
import type { PunishmentRow, RestrictedPunishment } from '../punishments/queries.js';
import { StoredProfile } from '../punishments/schemas.js';
import { DELIVERY_KINDS, DELIVERY_STATUSES } from './queries.js';


/** The longest pause a transient failure may ask for: an hour. */
export const MAX_RETRY_AFTER_SECONDS = 3600;

export const DeliveryItem = Type.Object(
  {
    item_id: Type.Integer(),
    kind: stringEnum(DELIVERY_KINDS, { description: 'issue, revoke, expire (lifts a lapsed punishment) or user_lookup' }),
    punishment_id: nullableString({ description: 'Null for a user_lookup' }),
    user_id: nullableString({ description: 'Chat id of the punished or looked-up user; null on a restricted item' }),
    surface: stringEnum(['chat'] as const, { description: 'Where the bot delivers: the chat platform' }),
    status: stringEnum(DELIVERY_STATUSES),
    attempts: Type.Integer({ description: 'Times the item was handed out' }),
    available_at: timestamp('Not handed out before this time (paced retries)'),
    result_note: nullableString(),
    last_error: nullableString(),
    ref: nullableString({ description: 'What the bot reported it created, e.g. a message id' }),
    requested_by: nullableString({ description: 'Chat id of the agent who asked' }),
    claimed_at: nullableTimestamp(),
    completed_at: nullableTimestamp(),
    created_at: timestamp(),
    updated_at: timestamp(),
    punishment: Type.Unsafe<PunishmentRow | RestrictedPunishment | null>({
      type: ['object', 'null'],
      additionalProperties: true,
      description: 'The live punishment row, read when answering; null for a user_lookup; only {punishment_id, report_id: null, status, created_at, updated_at, restricted} when it cites a supervisor-flagged report the caller may not see',
    }),
    restricted: Type.Optional(Type.Literal(true, { description: 'Its punishment cites a supervisor-flagged report the caller may not see, or it is a user_lookup another agent asked for (below supervisor rank): user_id, result_note, last_error and ref are withheld' })),
  },
  { title: 'DisciplineDelivery' },
);

export const ItemParams = Type.Object({ item_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });
export type ItemParams = Static<typeof ItemParams>;

export const ItemResult = Type.Object({ success: Type.Literal(true), item: DeliveryItem });

export const PendingQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ maxLength: 200, description: `Comma list of ${DELIVERY_STATUSES.join(', ')}; default pending,processing` })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 200 })),
    offset: Type.Optional(pageOffset({ default: 0 })),
  },
  { additionalProperties: false },
);
export type PendingQuery = Static<typeof PendingQuery>;

export const PendingResult = Type.Object({
  success: Type.Literal(true),
  count: Type.Integer({ description: 'Items matching the filter in all' }),
  items: Type.Array(DeliveryItem, { description: 'Oldest first' }),
});

export const LookupBody = Type.Object({ user_id: ChatId }, { additionalProperties: false });
export type LookupBody = Static<typeof LookupBody>;

export const LookupResult = Type.Object({ success: Type.Literal(true), lookup: DeliveryItem });

export const CompleteBody = Type.Object(
  {
    result: stringEnum(['success', 'failed'] as const),
    note: Type.Optional(nullableString({ maxLength: 2000 })),
    ref: Type.Optional(nullableString({ maxLength: 200 })),
    retry_after_seconds: Type.Optional(
      Type.Unsafe<number | null>({
        type: ['number', 'null'],
        minimum: 0,
        maximum: MAX_RETRY_AFTER_SECONDS,
        description: 'With result failed and a value above 0: a transient failure, handed out again after this many seconds',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CompleteBody = Static<typeof CompleteBody>;

export const ProfileResult = Type.Object({ success: Type.Literal(true), profile: StoredProfile });

export const NothingDue = Type.Null({ description: 'Nothing is due: an empty body' });
