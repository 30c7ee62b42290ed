// The bot's report action queues (spec: Report action queues; States and transitions, Report
// queue action). Response fields follow the report_actions columns (queries.ts ReportActionRow).
import { Type, type Static } from 'typebox';
import { nullableString, nullableTimestamp, stringEnum, timestamp, pageOffset } from '../platform/http/schemas.js';
import { ACTION_KINDS, ACTION_STATUSES } from './queries.js';


export const ReportBasics = Type.Object(
  {
    report_id: Type.String(),
    status: Type.String(),
    reporter: Type.String(),
    reported: Type.String(),
    reporter_name: nullableString(),
    reported_name: nullableString(),
    reason: Type.String(),
    assigned_agent: nullableString(),
    is_supervisor: Type.Boolean(),
    thread_id: nullableString(),
  },
  { description: 'What the bot needs of the report the action is about' },
);

/** The report lists' placeholder: a supervisor-flagged report the caller may not see. */
export const RestrictedReport = Type.Object(
  { report_id: Type.String(), status: Type.String(), is_supervisor: Type.Literal(true), restricted: Type.Literal(true) },
  { description: 'A supervisor-flagged report the caller may not see: its id and status only' },
);

export const Action = Type.Object({
  action_id: Type.Integer(),
  report_id: Type.String(),
  kind: stringEnum(ACTION_KINDS),
  queue: stringEnum(['operator', 'supervisor'] as const, { description: 'operator: non-supervisor reports; supervisor: supervisor-flagged reports' }),
  status: stringEnum(ACTION_STATUSES),
  payload: Type.Object({}, { additionalProperties: true, description: 'What the bot needs to carry the action out; its fields depend on the kind' }),
  attempts: Type.Integer({ description: 'Times the action was handed out since it was enqueued or last requeued' }),
  result_note: nullableString({ description: "The bot's note on completion" }),
  last_error: nullableString({ description: 'Why the last attempt failed (the bot, or the stale sweep)' }),
  requested_by: nullableString({ description: 'Chat id of the agent who asked; null for the bot or the service' }),
  claimed_at: nullableTimestamp('When the bot last claimed it'),
  completed_at: nullableTimestamp('When it reached success or failed'),
  created_at: timestamp(),
  updated_at: timestamp(),
  report: Type.Union([ReportBasics, RestrictedReport, Type.Null()], { description: 'Null only when the report is gone' }),
  restricted: Type.Optional(Type.Literal(true, { description: 'The report is supervisor-flagged and the caller may not see it: payload, result_note and last_error are withheld' })),
});

export const ActionList = Type.Object({
  success: Type.Literal(true),
  count: Type.Integer({ description: 'How many actions match in all (may exceed the page)' }),
  actions: Type.Array(Action, { description: 'Oldest first (queue order)' }),
});

export const ActionResult = Type.Object({ success: Type.Literal(true), action: Action });

/** 204 carries no body at all (@fastify/swagger reads type null as "no content"). */
export const NothingPending = Type.Null({ description: 'Nothing pending: empty body' });

export const ActionParams = Type.Object({ action_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });
export type ActionParams = Static<typeof ActionParams>;

export const QueueListQuery = Type.Object(
  {
    status: Type.Optional(
      Type.String({ maxLength: 200, default: 'pending,processing', description: `Comma list of ${ACTION_STATUSES.join(', ')}` }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 200 })),
    offset: Type.Optional(pageOffset({ default: 0 })),
  },
  { additionalProperties: false },
);
export type QueueListQuery = Static<typeof QueueListQuery>;

export const CompleteBody = Type.Object(
  {
    result: stringEnum(['success', 'failed'] as const),
    note: Type.Optional(nullableString({ maxLength: 2000, description: 'What happened; kept as result_note, and as last_error on failure' })),
  },
  { additionalProperties: false },
);
export type CompleteBody = Static<typeof CompleteBody>;
