// Contact thread rows (spec: Contact threads). Writes take the caller's transaction.
import type { ReportAccessFacts } from '../platform/auth/report-access.js';
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

/** A thread as GET /reports/<id>/contact reads it, with what the policy needs of its report. */
export interface ThreadRead {
  report: ReportAccessFacts;
  /** Undefined when the report has no thread. */
  thread: Thread | undefined;
}

type ThreadReadRow = ReportAccessFacts & Omit<ThreadRow, 'report_id' | 'created_at'> & { thread_report_id: string | null } & {
  [K in keyof MessageRow]: MessageRow[K] | null;
};

/**
 * The report's flag and assignee, its thread and the thread's messages, in one statement: one
 * snapshot, so the access decided from the flag read here is the access of the state the messages
 * come from. Read in several statements, a flag committed between them let a caller below
 * supervisor rank receive a thread of a report flagged before its messages were read, and the
 * messages written under the flag (issue 38). A row per message (one for none); undefined when
 * the report does not exist.
 */
export async function readThread(db: Queryable, reportId: string): Promise<ThreadRead | undefined> {
  const { rows } = await db.query<ThreadReadRow>(
    `select r.is_supervisor, r.assigned_agent, t.report_id as thread_report_id, t.closed, t.closed_at, t.closed_by, t.closed_by_name,
            m.id, m.direction, m.body, m.sender_chat_id, m.sender_name, m.created_at
     from reports r
     left join contact_threads t on t.report_id = r.report_id
     left join contact_messages m on m.report_id = t.report_id
     where r.report_id = $1::text
     order by m.created_at, m.id`,
    [reportId],
  );
  const first = rows[0];
  if (!first) return undefined;
  const report = { is_supervisor: first.is_supervisor, assigned_agent: first.assigned_agent };
  if (first.thread_report_id === null) return { report, thread: undefined };
  const messages = rows
    .filter((row) => row.id !== null)
    .map(({ id, direction, body, sender_chat_id, sender_name, created_at }) => ({ id, direction, body, sender_chat_id, sender_name, created_at }) as MessageRow);
  return {
    report,
    thread: {
      report_id: first.thread_report_id,
      messages,
      closed: first.closed,
      closed_at: first.closed_at,
      closed_by: first.closed_by,
      closed_by_name: first.closed_by_name,
      message_count: messages.length,
    },
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
