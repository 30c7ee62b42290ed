// Report payloads (spec: Resources, Reports). Lengths mirror the checks of migrations/0004_reports.sql
// so that bad input is a 400 naming the field rather than a database error.
import { Type, type Static } from 'typebox';
import { ChatId } from '../agents/schemas.js';
import { nullableString, stringEnum, timestamp, pageOffset } from '../platform/http/schemas.js';
import { REPORT_STATUSES, SETTABLE_STATUSES } from './queries.js';

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
/** The migration's check is `~* '^https?://'`; whitespace is refused too, a URL has none. */
const HTTP_URL = '^[hH][tT][tT][pP][sS]?://[^\\s]+$';

export const ReportStatus = stringEnum(REPORT_STATUSES);
export const ReportId = Type.String({ minLength: 1, maxLength: 64, description: 'The report (docket) id' });
export const HttpUrl = Type.String({ maxLength: 2000, pattern: HTTP_URL, description: 'An http or https URL' });

export const ReportSchema = Type.Object(
  {
    report_id: Type.String(),
    reporter: Type.String(),
    reported: Type.String(),
    reason: Type.String(),
    notes: Type.String(),
    evidence: Type.String(),
    reporter_name: nullable(Type.String()),
    reported_name: nullable(Type.String()),
    status: ReportStatus,
    assigned_agent: nullable(Type.String()),
    is_supervisor: Type.Boolean(),
    thread_id: nullable(Type.String()),
    evidence_url: nullable(Type.String()),
    investigation_started_at: nullable(timestamp()),
    created_at: timestamp(),
    updated_at: timestamp(),
  },
  { title: 'Report' },
);

/** What a caller below supervisor rank sees in place of a supervisor-flagged report. */
export const RestrictedReportSchema = Type.Object(
  {
    report_id: Type.String(),
    is_supervisor: Type.Literal(true),
    restricted: Type.Literal(true),
    status: ReportStatus,
    created_at: timestamp(),
    updated_at: timestamp(),
  },
  { title: 'RestrictedReport' },
);

export const ChatProfileSchema = Type.Object({
  chat_id: Type.String(),
  username: nullable(Type.String()),
  global_name: nullable(Type.String()),
  avatar: nullable(Type.String()),
  profile: Type.Unknown({ description: 'The whole profile object the bot delivered' }),
  updated_at: timestamp(),
});

export const FullReportSchema = Type.Object(
  {
    ...ReportSchema.properties,
    assigned_agent_name: nullable(Type.String()),
    notes_list: Type.Array(
      Type.Object({ id: Type.Integer(), note: Type.String(), author_chat_id: nullable(Type.String()), author_name: nullable(Type.String()), created_at: timestamp() }),
    ),
    evidence_list: Type.Array(
      Type.Object({
        id: Type.Integer(),
        description: Type.String(),
        url: Type.String(),
        submitted_by: nullable(Type.String()),
        submitted_by_id: nullable(Type.String()),
        submitted_by_name: nullable(Type.String()),
        created_at: timestamp(),
      }),
    ),
    timeline: Type.Array(
      Type.Object({
        id: Type.Integer(),
        report_id: Type.String(),
        event: Type.String(),
        actor_kind: Type.String(),
        actor_chat_id: nullable(Type.String()),
        actor_name: nullable(Type.String()),
        created_at: timestamp(),
      }),
    ),
    // Typed loosely because loadFullReport returns the snapshots as plain records.
    chat_profiles: Type.Array(Type.Unsafe<Record<string, unknown>>(ChatProfileSchema)),
  },
  { title: 'FullReport' },
);

export const ReportParams = Type.Object({ report_id: ReportId });
export const FullReportResult = Type.Object({ success: Type.Literal(true), report: FullReportSchema });
export const Ok = Type.Object({ success: Type.Literal(true) });

const Party = Type.String({ minLength: 1, maxLength: 100 });
const PartyName = Type.String({ maxLength: 100 });

export const CreateReportBody = Type.Object(
  {
    report_id: ReportId,
    reporter: Party,
    reported: Party,
    reason: Type.String({ minLength: 1, maxLength: 2000 }),
    notes: Type.String({ maxLength: 10000 }),
    evidence: Type.String({ maxLength: 10000 }),
    reporter_name: Type.Optional(PartyName),
    reported_name: Type.Optional(PartyName),
    status: Type.Optional(ReportStatus),
    assigned_agent: Type.Optional(ChatId),
    is_supervisor: Type.Optional(Type.Boolean()),
    thread_id: Type.Optional(Type.String({ maxLength: 64 })),
    evidence_url: Type.Optional(HttpUrl),
  },
  { additionalProperties: false },
);
export type CreateReportBody = Static<typeof CreateReportBody>;

export const UpdateReportBody = Type.Object(
  {
    reporter: Type.Optional(Party),
    reported: Type.Optional(Party),
    notes: Type.Optional(Type.String({ maxLength: 10000 })),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    status: Type.Optional(stringEnum(SETTABLE_STATUSES)),
    assigned_agent: Type.Optional(nullableString({ pattern: '^[0-9]{1,20}$', description: 'Chat id of the new assignee, or null to unassign' })),
    is_supervisor: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type UpdateReportBody = Static<typeof UpdateReportBody>;

export const DeleteReportBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: 500, pattern: '\\S', description: 'Why: kept in the forensic record' }) },
  { additionalProperties: false },
);

export const DeleteReportResult = Type.Object({
  success: Type.Literal(true),
  deleted: Type.Object({ report_id: Type.String(), deleted_at: timestamp() }),
});

export const SORTS = ['newest', 'oldest', 'updated'] as const;
export const REPORT_TYPES = ['operator', 'supervisor'] as const;

export const ReportListQuery = Type.Object(
  {
    status: Type.Optional(ReportStatus),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
    offset: Type.Optional(pageOffset()),
    statuses: Type.Optional(Type.String({ maxLength: 200, description: 'Comma list of report statuses' })),
    type: Type.Optional(stringEnum(REPORT_TYPES, { description: 'operator: not supervisor-flagged; supervisor: flagged' })),
    contact_open: Type.Optional(Type.Boolean({ description: 'true: the report has an open contact thread' })),
    sort: Type.Optional(stringEnum(SORTS)),
  },
  { additionalProperties: false },
);
export type ReportListQuery = Static<typeof ReportListQuery>;

const ListItem = Type.Union([RestrictedReportSchema, ReportSchema]);
export const ReportList = Type.Object({
  success: Type.Literal(true),
  reports: Type.Array(ListItem),
  total: Type.Optional(Type.Integer()),
  offset: Type.Optional(Type.Integer()),
  limit: Type.Optional(Type.Integer()),
  counts: Type.Optional(Type.Object({ operator: Type.Integer(), supervisor: Type.Integer() })),
});

const ProfileText = (maxLength: number) => Type.Optional(nullableString({ maxLength }));
export const ChatProfileInput = Type.Object(
  { chat_id: ChatId, username: ProfileText(100), global_name: ProfileText(100), avatar: ProfileText(2000) },
  { additionalProperties: true, description: 'A chat profile object; fields beyond these are kept in `profile`' },
);
export type ChatProfileInput = Static<typeof ChatProfileInput>;

export const ChatProfilesBody = Type.Object(
  { reporter: Type.Optional(ChatProfileInput), reportee: Type.Optional(ChatProfileInput), reported: Type.Optional(ChatProfileInput) },
  { additionalProperties: false },
);
export const ChatProfilesResult = Type.Object({ success: Type.Literal(true), stored: Type.Array(ChatProfileSchema) });
