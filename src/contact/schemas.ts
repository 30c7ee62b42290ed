// Contact threads with the reporter (spec: Contact threads).
import { Type, type Static } from 'typebox';
import { nullableString, timestamp } from '../platform/http/schemas.js';

export const ReportParams = Type.Object({ report_id: Type.String({ minLength: 1, maxLength: 64 }) });
export type ReportParams = Static<typeof ReportParams>;

const MessageBody = Type.String({ minLength: 1, maxLength: 4000 });

export const ReplyBody = Type.Object({ body: MessageBody }, { additionalProperties: false });
export type ReplyBody = Static<typeof ReplyBody>;

export const RespondBody = Type.Object(
  { body: MessageBody, sender_name: Type.String({ minLength: 1, maxLength: 100, description: "The reporter's display name" }) },
  { additionalProperties: false },
);
export type RespondBody = Static<typeof RespondBody>;

export const ContactMessage = Type.Object({
  id: Type.Integer(),
  direction: Type.Union([Type.Literal('to_reporter'), Type.Literal('from_reporter')]),
  body: Type.String(),
  sender_chat_id: nullableString(),
  sender_name: nullableString(),
  created_at: timestamp(),
});

export const ContactThread = Type.Object({
  report_id: Type.String(),
  messages: Type.Array(ContactMessage, { description: 'Oldest first' }),
  closed: Type.Boolean(),
  closed_at: nullableString({ description: 'ISO-8601 time the thread was closed' }),
  closed_by: nullableString({ description: 'Chat id of the closing agent; null when the bot closed it' }),
  closed_by_name: nullableString(),
  message_count: Type.Integer(),
});

export const ThreadResult = Type.Object({ success: Type.Literal(true), thread: ContactThread });
