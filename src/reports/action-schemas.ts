// Schemas of the report action, investigation, note, evidence and timeline routes. The report in
// their answers is the full report (queries.ts loadFullReport), described permissively here so
// these routes do not depend on the report routes' own schema file.
import { Type, type Static } from 'typebox';
import { stringEnum, timestamp } from '../platform/http/schemas.js';

export const REPORT_ACTIONS = ['validate', 'invalidate', 'investigate', 'contact_reporter', 'claim'] as const;
export type ReportAction = (typeof REPORT_ACTIONS)[number];

export const ReportIdParams = Type.Object({ report_id: Type.String({ minLength: 1, maxLength: 64 }) });

const FullReport = Type.Object({}, { additionalProperties: true, description: 'The full report: base fields, notes, evidence, timeline, chat profiles, resolved names' });

export const ActionBody = Type.Object(
  {
    action: stringEnum(REPORT_ACTIONS),
    reason: Type.String({ minLength: 1, maxLength: 500, description: 'Why; for contact_reporter, the first message to the reporter' }),
  },
  { additionalProperties: false },
);
export type ActionBody = Static<typeof ActionBody>;

export const NoteBody = Type.Object({ note: Type.String({ minLength: 1, maxLength: 5000 }) }, { additionalProperties: false });

export const EvidenceBody = Type.Object(
  {
    description: Type.String({ minLength: 1, maxLength: 1000 }),
    url: Type.String({ minLength: 1, maxLength: 2000, description: 'An http or https URL' }),
  },
  { additionalProperties: false },
);

export const TimelineBody = Type.Object({ event: Type.String({ minLength: 1, maxLength: 2000 }) }, { additionalProperties: false });

export const ActionResult = Type.Object({
  success: Type.Literal(true),
  action: stringEnum(REPORT_ACTIONS),
  queued: Type.Literal(true),
  report: FullReport,
});

export const ReportResult = Type.Object({ success: Type.Literal(true), report: FullReport });

const nullableText = Type.Union([Type.String(), Type.Null()]);

export const Note = Type.Object({
  id: Type.Integer(),
  report_id: Type.String(),
  note: Type.String(),
  author_kind: Type.String(),
  author_chat_id: nullableText,
  author_name: nullableText,
  created_at: timestamp(),
});
export const NoteResult = Type.Object({ success: Type.Literal(true), note: Note, report: FullReport });

export const Evidence = Type.Object({
  id: Type.Integer(),
  report_id: Type.String(),
  description: Type.String(),
  url: Type.String(),
  submitted_by: nullableText,
  submitted_by_id: nullableText,
  created_at: timestamp(),
});
export const EvidenceResult = Type.Object({ success: Type.Literal(true), evidence: Evidence, report: FullReport });

export const TimelineEntry = Type.Object({
  id: Type.Integer(),
  report_id: Type.String(),
  event: Type.String(),
  actor_kind: Type.String(),
  actor_chat_id: nullableText,
  actor_name: nullableText,
  created_at: timestamp(),
});
export const TimelineResult = Type.Object({ success: Type.Literal(true), event: TimelineEntry, report: FullReport });
