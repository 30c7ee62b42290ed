// Contact thread rows (spec: Contact threads). Writes take the caller's transaction.
import type { Queryable, Tx } from '../platform/db/types.js';
import type { Actor } from '../platform/events.js';

export interface ThreadRow {
  report_id: string;
  closed: boolean;
  closed_at: string | null;
  closed_by: string | null;
  closed_by_name: string | null;
  created_at: string;
}

export interface MessageRow {
  id: number;
  direction: 'to_reporter' | 'from_reporter';
  body: string;
  sender_chat_id: string | null;
  sender_name: string | null;
  created_at: string;
}

export interface Thread {
  report_id: string;
  messages: MessageRow[];
  closed: boolean;
  closed_at: string | null;
  closed_by: string | null;
  closed_by_name: string | null;
  message_count: number;
}

/** Who an actor is on a message or a closed thread: the bot has no chat id. */
export const actorIdentity = (actor: Actor): { chatId: string | null; name: string | null } =>
  actor.kind === 'agent'
    ? { chatId: actor.chatId, name: actor.name ?? null }
    : { chatId: null, name: actor.kind === 'bot' ? 'Automation bot' : 'System' };

export async function findThread(db: Queryable, reportId: string, options: { forUpdate?: boolean } = {}): Promise<ThreadRow | undefined> {
  const { rows } = await db.query<ThreadRow>(
    `select report_id, closed, closed_at, closed_by, closed_by_name, created_at
     from contact_threads where report_id = $1::text${options.forUpdate ? ' for update' : ''}`,
    [reportId],
  );
  return rows[0];
}

export async function loadThread(db: Queryable, thread: ThreadRow): Promise<Thread> {
  const { rows } = await db.query<MessageRow>(
    `select id, direction, body, sender_chat_id, sender_name, created_at
     from contact_messages where report_id = $1::text order by created_at, id`,
    [thread.report_id],
  );
  return {
    report_id: thread.report_id,
    messages: rows,
    closed: thread.closed,
    closed_at: thread.closed_at,
    closed_by: thread.closed_by,
    closed_by_name: thread.closed_by_name,
    message_count: rows.length,
  };
}

export async function addMessage(
  tx: Tx,
  message: { reportId: string; direction: MessageRow['direction']; body: string; senderChatId: string | null; senderName: string | null },
): Promise<MessageRow> {
  const { rows } = await tx.query<MessageRow>(
    `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name)
     values ($1::text, $2::text, $3::text, $4::text, $5::text)
     returning id, direction, body, sender_chat_id, sender_name, created_at`,
    [message.reportId, message.direction, message.body, message.senderChatId, message.senderName],
  );
  return rows[0]!;
}

export async function closeThread(tx: Tx, reportId: string, actor: Actor): Promise<ThreadRow> {
  const who = actorIdentity(actor);
  const { rows } = await tx.query<ThreadRow>(
    `update contact_threads set closed = true, closed_at = now(), closed_by = $2::text, closed_by_name = $3::text
     where report_id = $1::text
     returning report_id, closed, closed_at, closed_by, closed_by_name, created_at`,
    [reportId, who.chatId, who.name],
  );
  return rows[0]!;
}
