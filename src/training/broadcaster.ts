// Live training events (spec: Events, broadcast audiences; issue 11 item 9). A session's routes
// hand what they recorded to one Broadcaster after the commit, so nothing is announced that did not
// happen; delivery is best-effort: a failure is logged and never fails the request, and clients
// reconcile through the GET endpoints. Implemented by src/realtime (the built-in hub through NOTIFY,
// or an external Supabase project).
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { EnvironmentName } from '../config.js';
import type { Tx } from '../platform/db/types.js';
import type { EventRecord } from '../platform/events.js';
import type { TrainingEventSchema } from './session-schemas.js';

export const userTopic = (chatId: string) => `training:user:${chatId}`;
export const sessionTopic = (sessionId: number) => `training:session:${sessionId}`;

/** The event as clients see it, in a broadcast and in the session payload. */
export type TrainingEvent = Static<typeof TrainingEventSchema>;

export const trainingEvent = (e: EventRecord): TrainingEvent => ({
  id: e.id,
  type: e.type,
  actor_kind: e.actor_kind,
  actor_chat_id: e.actor_chat_id,
  actor_name: e.actor_name,
  data: e.data,
  client_id: e.client_id,
  correlation_id: e.correlation_id,
  created_at: e.created_at,
});

export interface BroadcastMessage {
  topic: string;
  /** The spec's event name (the recorded type, or EVIDENCE_RELEASED / EVIDENCE_LOCKED). */
  event: string;
  payload: { session_id: number; event: TrainingEvent };
}

export interface Broadcaster {
  /** Sends the messages to the environment's realtime channels; may reject (the caller logs it). */
  send(environment: EnvironmentName, messages: readonly BroadcastMessage[]): Promise<void>;
  /**
   * Optional: hands the messages to the change's own transaction, to go out when it commits and
   * never if it rolls back (NOTIFY does exactly this). Saves the request a round trip and a commit
   * of its own after the change's.
   */
  sendOnCommit?(tx: Tx, environment: EnvironmentName, messages: readonly BroadcastMessage[]): Promise<void>;
}

/**
 * Who hears an event: session events go to both members' user channels (spec: Events), except a
 * trainer's note, which is private until released; the evidence overrides go to the session channel.
 */
export type Audience = 'members' | 'trainer' | 'session';

export interface Announcement {
  event: EventRecord;
  audience: Audience;
  /** The broadcast's name when it is not the recorded event's type. */
  name?: string;
}

export interface SessionMembers {
  id: number;
  trainer_id: string;
  trainee_id: string;
}

export function messagesFor(session: SessionMembers, announcements: readonly Announcement[]): BroadcastMessage[] {
  return announcements.flatMap(({ event, audience, name }) => {
    const topics =
      audience === 'session' ? [sessionTopic(session.id)] : audience === 'trainer' ? [userTopic(session.trainer_id)] : [userTopic(session.trainer_id), userTopic(session.trainee_id)];
    const payload = { session_id: session.id, event: trainingEvent(event) };
    return topics.map((topic) => ({ topic, event: name ?? event.type, payload }));
  });
}

/** Broadcasts that failed since the start (the health answer shows them). */
export interface BroadcastStats {
  failures: number;
}

export interface AnnounceDeps {
  broadcaster: Broadcaster;
  log: Logger;
  stats: BroadcastStats;
}

/** Sends after the commit; a failure is logged with the request id, counted and swallowed (best-effort). */
export async function announce(
  { broadcaster, log, stats }: AnnounceDeps,
  context: { environment: EnvironmentName; requestId: string },
  session: SessionMembers,
  announcements: readonly Announcement[],
): Promise<void> {
  const messages = messagesFor(session, announcements);
  if (messages.length === 0) return;
  try {
    await broadcaster.send(context.environment, messages);
  } catch (err) {
    broadcastFailed({ log, stats }, context, session, messages, err);
  }
}

function broadcastFailed(
  { log, stats }: Pick<AnnounceDeps, 'log' | 'stats'>,
  context: { requestId: string },
  session: SessionMembers,
  messages: readonly BroadcastMessage[],
  err: unknown,
): void {
  stats.failures++;
  log.warn({ err, request_id: context.requestId, session_id: session.id, events: messages.map((m) => m.event) }, 'training broadcast failed');
}

/**
 * Inside the change's transaction, for a broadcaster that sends on commit: true when it took the
 * messages (then nothing is left to send after the commit). On a savepoint, so that a failure is
 * logged and counted like any failed broadcast and the change still commits.
 */
export async function announceOnCommit(
  { broadcaster, log, stats }: AnnounceDeps,
  tx: Tx,
  context: { environment: EnvironmentName; requestId: string },
  session: SessionMembers,
  announcements: readonly Announcement[],
): Promise<boolean> {
  if (!broadcaster.sendOnCommit) return false;
  const messages = messagesFor(session, announcements);
  if (messages.length === 0) return true;
  try {
    await tx.transaction((inner) => broadcaster.sendOnCommit!(inner, context.environment, messages));
  } catch (err) {
    broadcastFailed({ log, stats }, context, session, messages, err);
  }
  return true;
}
