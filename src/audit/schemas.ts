// GET /audit (spec: Audit log): the canonical events, searched, filtered, sorted and paged in SQL.
import { Type, type Static } from 'typebox';
import { nullableString, stringEnum, timestamp, pageOffset } from '../platform/http/schemas.js';

/**
 * `total` counts matches up to this many (and says when there were more): counting every event of
 * a term as broad as an agent's name visits a heap row per match, hundreds of milliseconds at a
 * million events, while the page itself reads fifty.
 */
export const AUDIT_TOTAL_CAP = 1_000;

export const AUDIT_SORTS = ['newest', 'oldest', 'event', 'by', 'report'] as const;
export type AuditSort = (typeof AUDIT_SORTS)[number];

export const AuditQuery = Type.Object(
  {
    search: Type.Optional(
      Type.String({
        maxLength: 200,
        description: "Case-insensitive substring of type, report id, actor name or before/after/data; a report's exact id lists that report's events",
      }),
    ),
    event: Type.Optional(Type.String({ maxLength: 200, description: 'Comma-separated substrings of the event type, e.g. `report.,contact.`' })),
    report_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
    offset: Type.Optional(pageOffset({ default: 0 })),
    sort: Type.Optional(
      Type.Unsafe<AuditSort>({ type: 'string', enum: [...AUDIT_SORTS], default: 'newest', description: 'newest, oldest, event (type), by (actor name), report (report id)' }),
    ),
    supervisor: Type.Optional(stringEnum(['only', 'exclude'] as const)),
  },
  { additionalProperties: false },
);
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditEvent = Type.Object({
  id: Type.Integer(),
  type: Type.String(),
  actor_kind: stringEnum(['agent', 'bot', 'system'] as const),
  actor_chat_id: nullableString(),
  actor_name: nullableString(),
  report_id: nullableString(),
  before: Type.Unknown(),
  after: Type.Unknown({ description: 'A subject export or erasure without its total and counts below supervisor rank' }),
  data: Type.Unknown(),
  correlation_id: Type.String(),
  is_supervisor: Type.Boolean({ description: 'A report the event is about is supervisor-flagged now' }),
  created_at: timestamp(),
  text: Type.String({ description: 'One-line description; chat ids replaced by [id]' }),
});

export const AuditList = Type.Object({
  success: Type.Literal(true),
  total: Type.Integer({ description: `Matching events, counted up to ${AUDIT_TOTAL_CAP.toLocaleString('en')}` }),
  total_capped: Type.Boolean({ description: `More than ${AUDIT_TOTAL_CAP.toLocaleString('en')} events match: total is that cap` }),
  offset: Type.Integer(),
  limit: Type.Integer(),
  events: Type.Array(AuditEvent),
});
