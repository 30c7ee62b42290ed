// The session payload (spec: GET /training/sessions/<id>) as each role sees it (docs/decisions.md).
// A trainer sees everything. A trainee sees the briefing, each objective's title and whether it is
// complete (never its complete_when), each evidence item's title and, only once it is available,
// its content (never unlock_when); released notes only; the grade without the trainer's comments;
// and no event saying that a private note was written.
import type { Queryable } from '../platform/db/types.js';
import { trainingEvent } from './broadcaster.js';
import type { ScenarioDefinition } from './scenario-file.js';
import { listInjections, listInstances, listNotes, listSessionEvents, type InstanceRow, type SessionRow } from './session-queries.js';

export type Role = 'trainer' | 'trainee';

/** Session detail events (spec: Limits). */
export const SESSION_EVENTS_LIMIT = 200;

export function roleOf(session: Pick<SessionRow, 'trainer_id' | 'trainee_id'>, chatId: string): Role | undefined {
  if (session.trainer_id === chatId) return 'trainer';
  if (session.trainee_id === chatId) return 'trainee';
  return undefined;
}

export function sessionView(session: SessionRow, role: Role) {
  const { score, result, comments, released_feedback, evaluated_at, evaluated_by, ...rest } = session;
  const evaluation =
    score === null || result === null || evaluated_at === null
      ? null
      : { score, result, ...(role === 'trainer' ? { comments } : {}), released_feedback, evaluated_at, evaluated_by };
  return { ...rest, evaluation };
}

function traineeDefinition(definition: ScenarioDefinition, instance: InstanceRow) {
  const { completed_objectives, available_evidence } = instance.state;
  return {
    briefing: definition.briefing,
    objectives: definition.objectives.map((o) => ({ id: o.id, title: o.title, completed: completed_objectives.includes(o.id) })),
    evidence: definition.evidence.map((e) =>
      available_evidence.includes(e.key) ? { key: e.key, title: e.title, available: true, content: e.content } : { key: e.key, title: e.title, available: false },
    ),
  };
}

export function instanceView(instance: InstanceRow, role: Role) {
  const { session_id: _session, ...rest } = instance;
  return role === 'trainer' ? rest : { ...rest, definition: traineeDefinition(instance.definition, instance) };
}

/** Everything the session page needs, read in parallel on the pool. */
export async function loadSessionPayload(db: Queryable, session: SessionRow, role: Role) {
  const trainer = role === 'trainer';
  const [instances, events, notes, injections] = await Promise.all([
    listInstances(db, session.id),
    listSessionEvents(db, session.id, trainer, SESSION_EVENTS_LIMIT),
    listNotes(db, session.id, trainer),
    listInjections(db, session.id),
  ]);
  const scenarios = instances.map((i) => instanceView(i, role));
  return {
    success: true as const,
    role,
    session: sessionView(session, role),
    active_scenario: scenarios.find((i) => i.status === 'active') ?? null,
    scenarios,
    events: events.map(trainingEvent),
    notes,
    injections,
  };
}
