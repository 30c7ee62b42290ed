// The one way to write a canonical event (spec: Events). It takes a Tx, never a Db, so an event
// is always committed or rolled back together with the change it describes.
import type { Tx } from './db/types.js';

export type EventType =
  | 'report.created'
  | 'report.assigned'
  | 'report.status_changed'
  | 'report.updated'
  | 'report.deleted'
  | 'report.note_added'
  | 'report.timeline_entry_added'
  | 'contact.message_added'
  | 'contact.thread_closed'
  | 'queue.action_completed'
  | 'queue.action_failed'
  | 'queue.action_requeued'
  | 'punishment.issued'
  | 'punishment.updated'
  | 'punishment.revoked'
  /** Beyond the spec's table: the expiry sweep (docs/decisions.md). */
  | 'punishment.expired'
  | 'delivery.completed'
  | 'delivery.failed'
  | 'delivery.requeued'
  | 'admin.queue_requeued'
  | 'admin.queue_cancelled'
  | 'admin.queue_swept'
  | 'admin.access_granted'
  | 'admin.access_revoked'
  | 'admin.access_removed'
  | 'admin.report_corrected'
  | 'admin.schema_reloaded'
  /** Beyond the spec's table: PATCH /admin/agents (every admin mutation writes its event; docs/decisions.md). */
  | 'admin.agent_updated'
  /** Beyond the spec's table: subject access and erasure (issue 32). */
  | 'admin.subject_exported'
  | 'admin.subject_erased'
  /** Beyond the spec's table: a closed case's personal data erased for its age (RETENTION_DAYS, issue 32). */
  | 'admin.case_erased'
  /** Beyond the spec's table: POST /agents/create, PATCH /agents/<id>/update (every state change writes its event). */
  | 'agent.created'
  | 'agent.updated'
  | `SESSION_${string}`
  | 'SCENARIO_ACTIVATED'
  | 'TRAINER_RELEASED_EVIDENCE'
  | 'TRAINER_LOCKED_EVIDENCE'
  | 'TRAINER_COMPLETED_OBJECTIVE'
  | 'TRAINER_RESET_OBJECTIVE'
  | 'TRAINER_INJECTED_INFORMATION'
  | 'TRAINER_NOTE_ADDED'
  | 'TRAINEE_NOTE_ADDED'
  | 'TRAINER_NOTE_RELEASED'
  /** Trainee actions (the engine's whitelist) and what the scenario engine did with them (docs/decisions.md). */
  | 'OPEN_EVIDENCE'
  | 'ADD_FINDING'
  | 'CONTACT_PARTY'
  | 'SUBMIT_DECISION'
  | 'OBJECTIVE_COMPLETED'
  | 'EVIDENCE_UNLOCKED';

/** Who caused a change: a signed-in agent, the bot (API key), or the service itself (sweeps). */
export type Actor =
  | { kind: 'agent'; chatId: string; name?: string | null | undefined }
  | { kind: 'bot' }
  | { kind: 'system' };

export interface EventInput {
  type: EventType;
  actor: Actor;
  /** Ties together every event and audit row of one operation; the request id by default. */
  correlationId: string;
  reportId?: string | null | undefined;
  before?: unknown;
  after?: unknown;
  data?: unknown;
  /** Supervisor-flagged: hidden from callers below supervisor rank wherever events are read. */
  isSupervisor?: boolean | undefined;
  /** The training session the event belongs to (its detail lists the session's events). */
  trainingSessionId?: number | undefined;
  /** A trainee action's client id, unique within its session. */
  clientId?: string | undefined;
}

export interface EventRecord {
  id: number;
  type: EventType;
  actor_kind: Actor['kind'];
  actor_chat_id: string | null;
  actor_name: string | null;
  report_id: string | null;
  before: unknown;
  after: unknown;
  data: unknown;
  correlation_id: string;
  is_supervisor: boolean;
  training_session_id: number | null;
  client_id: string | null;
  created_at: string;
}

/** The columns of an EventRecord (not the derived search text, nor the audit chain's sealing_tx). */
export const EVENT_COLUMNS =
  'id, type, actor_kind, actor_chat_id, actor_name, report_id, before, after, data, correlation_id, is_supervisor, training_session_id, client_id, created_at';

const toJson = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

export async function recordEvent(tx: Tx, event: EventInput): Promise<EventRecord> {
  const actor = event.actor;
  const { rows } = await tx.query<EventRecord>(
    `insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, before, after, data, correlation_id, is_supervisor, training_session_id, client_id)
     values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::jsonb, $8::jsonb, $9::text, $10::boolean, $11::bigint, $12::text)
     returning ${EVENT_COLUMNS}`,
    [
      event.type,
      actor.kind,
      actor.kind === 'agent' ? actor.chatId : null,
      actor.kind === 'agent' ? (actor.name ?? null) : null,
      event.reportId ?? null,
      toJson(event.before),
      toJson(event.after),
      toJson(event.data),
      event.correlationId,
      event.isSupervisor ?? false,
      event.trainingSessionId ?? null,
      event.clientId ?? null,
    ],
    // Every state change writes one: planned once per connection.
    { name: 'record_event' },
  );
  return rows[0]!;
}
