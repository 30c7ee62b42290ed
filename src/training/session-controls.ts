// The training session's state table (spec: States "Training session"), as data, and the one
// function that carries a control out on a locked session: the status and clock, the scenario
// children, its SESSION_* event and, where a scenario becomes active, SCENARIO_ACTIVATED.
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import { recordEvent, type Actor, type EventRecord, type EventType } from '../platform/events.js';
import { initialState } from './engine.js';
import type { ScenarioDefinition } from './scenario-file.js';
import { findInstance, type InstanceRow, type SessionRow } from './session-queries.js';
import type { EvaluateBody, SessionStatus } from './session-schemas.js';

export const CONTROLS = ['start', 'pause', 'resume', 'restart', 'reset', 'end', 'abort'] as const;
export type Control = (typeof CONTROLS)[number];

/** "Run states" (restart, reset): a run has begun. Pending has nothing to restart, aborted is over. */
const RUN_STATES: readonly SessionStatus[] = ['active', 'paused', 'completed'];

interface Transition {
  from: readonly SessionStatus[];
  to: SessionStatus;
  event: EventType;
  /** restart and reset begin the next run: clock, scenario states and evaluation wiped. */
  fresh?: boolean;
  /** A waiting scenario becomes active when none is (start; restart after its wipe). */
  activatesScenario?: boolean;
}

export const TRANSITIONS: Record<Control, Transition> = {
  start: { from: ['pending'], to: 'active', event: 'SESSION_STARTED', activatesScenario: true },
  pause: { from: ['active'], to: 'paused', event: 'SESSION_PAUSED' },
  resume: { from: ['paused'], to: 'active', event: 'SESSION_RESUMED' },
  restart: { from: RUN_STATES, to: 'active', event: 'SESSION_RESTARTED', fresh: true, activatesScenario: true },
  reset: { from: RUN_STATES, to: 'pending', event: 'SESSION_RESET', fresh: true },
  end: { from: ['active', 'paused'], to: 'completed', event: 'SESSION_ENDED' },
  abort: { from: ['pending', 'active', 'paused'], to: 'aborted', event: 'SESSION_ABORTED' },
};

export const invalidMove = (session: SessionRow, what: string) =>
  errors.conflict(`Training session ${session.id} is ${session.status}: cannot ${what}`, 'INVALID_SESSION_STATE');

interface Context {
  actor: Actor;
  correlationId: string;
}

/** Moves the session's status and clock; leaving `active` banks the time run since running_since. */
async function moveSession(tx: Tx, id: number, to: SessionStatus, fresh: boolean): Promise<void> {
  await tx.query(
    `update training_sessions set
       status = $2::text,
       run = run + case when $3::boolean then 1 else 0 end,
       elapsed_ms = case when $3::boolean then 0 else elapsed_ms + coalesce((extract(epoch from (now() - running_since)) * 1000)::bigint, 0) end,
       running_since = case when $2::text = 'active' then now() end,
       started_at = case when $3::boolean then (case when $2::text = 'active' then now() end) else coalesce(started_at, case when $2::text = 'active' then now() end) end,
       ended_at = case when $2::text in ('completed', 'aborted') then coalesce(ended_at, now()) end,
       score = case when $3::boolean then null else score end,
       result = case when $3::boolean then null else result end,
       comments = case when $3::boolean then null else comments end,
       released_feedback = case when $3::boolean then null else released_feedback end,
       evaluated_at = case when $3::boolean then null else evaluated_at end,
       evaluated_by = case when $3::boolean then null else evaluated_by end,
       updated_at = now()
     where id = $1::bigint`,
    [id, to, fresh],
    { name: 'move_training_session' },
  );
}

/** Every scenario of the session back to waiting with a fresh state (restart, reset). */
async function rewindScenarios(tx: Tx, sessionId: number): Promise<void> {
  const { rows } = await tx.query<{ id: number; definition: ScenarioDefinition }>(
    'select id, definition from training_session_scenarios where session_id = $1::bigint',
    [sessionId],
  );
  if (rows.length === 0) return;
  await tx.query(
    `update training_session_scenarios i set status = 'waiting', state = x.state, activated_at = null, completed_at = null, updated_at = now()
     from jsonb_to_recordset($1::jsonb) as x(id bigint, state jsonb) where i.id = x.id`,
    [JSON.stringify(rows.map((r) => ({ id: r.id, state: initialState(r.definition) })))],
  );
}

/** The first waiting scenario becomes active when none is; the instance, or undefined. */
async function activateFirstWaiting(tx: Tx, sessionId: number): Promise<InstanceRow | undefined> {
  const { rows } = await tx.query<{ id: number }>(
    `update training_session_scenarios set status = 'active', activated_at = now(), updated_at = now()
     where id = (select id from training_session_scenarios where session_id = $1::bigint and status = 'waiting' order by position limit 1)
       and not exists (select 1 from training_session_scenarios where session_id = $1::bigint and status = 'active')
     returning id`,
    [sessionId],
  );
  return rows.length === 0 ? undefined : findInstance(tx, sessionId, rows[0]!.id);
}

export function sessionEventData(session: Pick<SessionRow, 'id' | 'run'>, extra: Record<string, unknown> = {}) {
  return { session_id: session.id, run: session.run, ...extra };
}

export async function recordSessionEvent(tx: Tx, ctx: Context, session: Pick<SessionRow, 'id' | 'run'>, type: EventType, extra: { before?: unknown; after?: unknown; data?: Record<string, unknown>; clientId?: string } = {}) {
  return recordEvent(tx, {
    type,
    actor: ctx.actor,
    correlationId: ctx.correlationId,
    before: extra.before,
    after: extra.after,
    data: sessionEventData(session, extra.data),
    trainingSessionId: session.id,
    clientId: extra.clientId,
  });
}

export async function recordScenarioActivated(tx: Tx, ctx: Context, session: Pick<SessionRow, 'id' | 'run'>, instance: InstanceRow, completed?: InstanceRow) {
  return recordSessionEvent(tx, ctx, session, 'SCENARIO_ACTIVATED', {
    data: {
      session_scenario_id: instance.id,
      scenario_id: instance.scenario_id,
      slug: instance.slug,
      ...(completed ? { completed_session_scenario_id: completed.id } : {}),
    },
  });
}

/** Carries out a control on a session locked by the caller; 409 when the table does not allow it. */
export async function applyControl(tx: Tx, ctx: Context, session: SessionRow, control: Control): Promise<EventRecord[]> {
  const move = TRANSITIONS[control];
  if (!move.from.includes(session.status)) throw invalidMove(session, control);
  await moveSession(tx, session.id, move.to, move.fresh ?? false);
  if (move.fresh) await rewindScenarios(tx, session.id);
  const run = { id: session.id, run: session.run + (move.fresh ? 1 : 0) };
  const events = [await recordSessionEvent(tx, ctx, run, move.event, { before: { status: session.status }, after: { status: move.to } })];
  if (move.activatesScenario) {
    const activated = await activateFirstWaiting(tx, session.id);
    if (activated) events.push(await recordScenarioActivated(tx, ctx, run, activated));
  }
  return events;
}

/** Evaluate (any status): completes the session with its grade. */
export async function applyEvaluation(tx: Tx, ctx: Context & { evaluator: string }, session: SessionRow, body: EvaluateBody): Promise<EventRecord> {
  await moveSession(tx, session.id, 'completed', false);
  await tx.query(
    `update training_sessions set score = $2::smallint, result = $3::text, comments = $4::text, released_feedback = $5::text, evaluated_at = now(), evaluated_by = $6::text
     where id = $1::bigint`,
    [session.id, body.score, body.result, body.comments ?? null, body.released_feedback ?? null, ctx.evaluator],
  );
  // The trainer's comments stay out of the event: the event log is readable beyond this session.
  return recordSessionEvent(tx, ctx, session, 'SESSION_EVALUATED', {
    before: { status: session.status },
    after: { status: 'completed' },
    data: { score: body.score, result: body.result },
  });
}
