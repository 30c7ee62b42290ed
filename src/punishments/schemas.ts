// Punishments (spec: Punishments and discipline; Resources, Punishment). Bodies are strict; the
// server-managed fields get their own message before the generic unknown-field one (routes.ts).
import { Type, type Static } from 'typebox';
import { ChatId } from '../agents/schemas.js';
import { nullableString, nullableTimestamp, stringEnum, timestamp, pageOffset } from '../platform/http/schemas.js';
import { PUNISHMENT_STATUSES } from './queries.js';

/** Fields the service writes itself; a client naming one gets a 400 that says so. */
export const SERVER_MANAGED_FIELDS = [
  'punishment_id',
  'issued_by',
  'issued_by_name',
  'created_at',
  'updated_at',
  'revoked_at',
  'revoked_by',
  'revoke_reason',
  'expired_at',
  'delivery',
  'profile',
] as const;

const Status = stringEnum(PUNISHMENT_STATUSES, { description: 'Active and Appealed are in force; Expired and Revoked are set by the service' });

/** What a client may set, at creation and in a PATCH (same bounds as the table's checks). */
const editable = {
  username: Type.Optional(nullableString({ maxLength: 100 })),
  detailed_reason: Type.Optional(nullableString({ maxLength: 10000 })),
  duration: Type.Optional(nullableString({ maxLength: 64, description: 'A label; 30m, 12h, 7d or 2w also sets expires_at when none is given' })),
  expires_at: Type.Optional(nullableTimestamp('ISO 8601 with a time zone, in the future')),
  status: Type.Optional(Status),
  evidence: Type.Optional(nullableString({ maxLength: 10000 })),
  notes: Type.Optional(nullableString({ maxLength: 10000 })),
  report_id: Type.Optional(nullableString({ maxLength: 64, description: 'Must name an existing report' })),
};
export const EDITABLE_FIELDS = Object.keys(editable) as (keyof typeof editable)[];

export const CreatePunishmentBody = Type.Object(
  { user_id: ChatId, reason: Type.String({ minLength: 1, maxLength: 2000 }), ...editable },
  { additionalProperties: false },
);
export type CreatePunishmentBody = Static<typeof CreatePunishmentBody>;

const AuditReason = Type.String({ minLength: 1, maxLength: 500, description: 'Why: kept in the audit row and the event' });

export const UpdatePunishmentBody = Type.Object({ reason: AuditReason, ...editable }, { additionalProperties: false });
export type UpdatePunishmentBody = Static<typeof UpdatePunishmentBody>;

export const RevokeBody = Type.Object({ reason: AuditReason }, { additionalProperties: false });

export const PunishmentParams = Type.Object({ punishment_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const ProfileParams = Type.Object({ chat_id: ChatId });

export const ListQuery = Type.Object(
  {
    user_id: Type.Optional(ChatId),
    status: Type.Optional(Status),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 200 }),
    offset: pageOffset({ default: 0 }),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

export const StoredProfile = Type.Object({
  chat_id: Type.String(),
  username: nullableString(),
  global_name: nullableString(),
  avatar: nullableString(),
  updated_at: timestamp(),
});

const DeliveryState = Type.Object({
  item_id: Type.Integer(),
  kind: Type.String(),
  status: Type.String(),
  attempts: Type.Integer(),
  result_note: nullableString(),
  last_error: nullableString(),
  ref: nullableString(),
  available_at: timestamp(),
  completed_at: nullableTimestamp(),
  updated_at: timestamp(),
});

export const Punishment = Type.Object({
  punishment_id: Type.String({ pattern: '^[A-Z]{2}[0-9][A-Z]{2}[0-9]$' }),
  user_id: Type.String(),
  username: nullableString(),
  reason: Type.String(),
  detailed_reason: nullableString(),
  duration: nullableString(),
  expires_at: nullableTimestamp(),
  status: Status,
  evidence: nullableString(),
  notes: nullableString(),
  report_id: nullableString(),
  issued_by: nullableString({ description: 'Chat id of the issuing agent' }),
  issued_by_name: nullableString(),
  revoked_at: nullableTimestamp(),
  revoked_by: nullableString(),
  revoke_reason: nullableString(),
  expired_at: nullableTimestamp(),
  created_at: timestamp(),
  updated_at: timestamp(),
  delivery: Type.Union([DeliveryState, Type.Null()], { description: 'The latest discipline delivery of this punishment' }),
  profile: Type.Union([StoredProfile, Type.Null()], { description: "The user's stored chat profile, when one is on record" }),
});

/** A punishment citing a supervisor-flagged report, as those who may not see that report get it. */
export const RestrictedPunishment = Type.Object(
  {
    punishment_id: Type.String(),
    report_id: Type.Null({ description: 'Not shown: not even the id of the report it cites' }),
    status: Status,
    created_at: timestamp(),
    updated_at: timestamp(),
    restricted: Type.Literal(true),
  },
  { description: 'Cites a supervisor-flagged report the caller may not see: nothing else is shown, neither the report nor the person punished' },
);

export const PunishmentResult = Type.Object({ success: Type.Literal(true), punishment: Punishment });
export const PunishmentList = Type.Object({
  success: Type.Literal(true),
  count: Type.Integer({ description: 'Punishments matching the filters, over all pages' }),
  punishments: Type.Array(Type.Union([Punishment, RestrictedPunishment]), { description: 'Newest first' }),
});
export const ProfileResult = Type.Object({ success: Type.Literal(true), profile: StoredProfile });
