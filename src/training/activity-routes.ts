// What happens inside a training session (spec: Training center; issue 11): trainee actions run
// through the scenario engine, the trainer's overrides of evidence and objectives, injections,
// notes and their release. Each is one transaction on the locked session (changeSession).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import type { EventRecord } from '../platform/events.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { trainingEvent, type Announcement } from './broadcaster.js';
import { applyAction, completeObjective, resetObjective, setEvidence, type EngineEvent, type EngineStep } from './engine.js';
import { noActiveSession, TRAINEE_VISIBLE, changeSession, type ChangeContext, type TrainingDeps } from './session-access.js';
import { invalidMove, recordSessionEvent } from './session-controls.js';
import {
  findActionByClientId,
  findActiveInstance,
  findInstance,
  insertInjection,
  insertNote,
  releaseNote,
  saveInstanceState,
  touchSession,
  type InstanceRow,
} from './session-queries.js';
import {
  ACTION_PAYLOAD_MAX,
  EvidenceParams,
  InjectBody,
  InjectResult,
  NoteBody,
  NoteParams,
  NoteResult,
  ObjectiveParams,
  OverrideResult,
  RecordResult,
  SessionParams,
  TraineeActionBody,
} from './session-schemas.js';
import { instanceView } from './session-view.js';

const tags = ['Training center'];
const CLOSED: ReadonlySet<string> = new Set(['completed', 'aborted']);

/** The engine's own events, recorded in the action's transaction. */
async function recordEngineEvents(tx: Tx, ctx: ChangeContext, instance: InstanceRow, events: readonly EngineEvent[]): Promise<EventRecord[]> {
  const recorded: EventRecord[] = [];
  for (const e of events) {
    const { type, ...detail } = e;
    if (type !== 'OBJECTIVE_COMPLETED' && type !== 'EVIDENCE_UNLOCKED') continue;
    recorded.push(await recordSessionEvent(tx, ctx, ctx.session, type, { data: { session_scenario_id: instance.id, ...detail } }));
  }
  return recorded;
}

/** The scenario a trainer override applies to: the active one, in a session that is not closed. */
async function overrideTarget(tx: Tx, ctx: ChangeContext, what: string): Promise<InstanceRow> {
  if (CLOSED.has(ctx.session.status)) throw invalidMove(ctx.session, what);
  const instance = await findActiveInstance(tx, ctx.session.id);
  if (!instance) throw errors.conflict(`Training session ${ctx.session.id} has no active scenario`, 'NO_ACTIVE_SCENARIO');
  return instance;
}

type Override =
  | { kind: 'evidence'; key: string; available: boolean }
  | { kind: 'objective'; id: string; complete: boolean };

const OVERRIDE_EVENTS = {
  release: 'TRAINER_RELEASED_EVIDENCE',
  lock: 'TRAINER_LOCKED_EVIDENCE',
  complete: 'TRAINER_COMPLETED_OBJECTIVE',
  reset: 'TRAINER_RESET_OBJECTIVE',
} as const;

/**
 * A trainer override on the active scenario: the state through the engine (an objective completed
 * by hand unlocks what it unlocks), the TRAINER_* event, what followed; evidence overrides are
 * broadcast to the session channel as EVIDENCE_RELEASED / EVIDENCE_LOCKED.
 */
async function applyOverride(tx: Tx, ctx: ChangeContext, override: Override) {
  const verb = override.kind === 'evidence' ? (override.available ? 'release' : 'lock') : override.complete ? 'complete' : 'reset';
  const instance = await overrideTarget(tx, ctx, `${verb} ${override.kind}`);
  const { definition, state } = instance;
  let step: EngineStep | undefined;
  if (override.kind === 'evidence') {
    step = setEvidence(definition, state, override.key, override.available);
    if (!step) throw errors.notFound(`Evidence "${override.key}" of the active scenario`);
  } else {
    step = override.complete ? completeObjective(definition, state, override.id) : resetObjective(definition, state, override.id);
    if (!step) throw errors.notFound(`Objective "${override.id}" of the active scenario`);
  }
  if (step.events.length > 0) await saveInstanceState(tx, instance.id, step.state);
  await touchSession(tx, ctx.session.id);
  const subject = override.kind === 'evidence' ? { evidence: override.key } : { objective: override.id };
  const event = await recordSessionEvent(tx, ctx, ctx.session, OVERRIDE_EVENTS[verb], {
    data: { session_scenario_id: instance.id, ...subject, changed: step.events.length > 0 },
  });
  // The override's own engine event is the TRAINER_* event; what it set off is recorded as the engine's.
  const followed = await recordEngineEvents(tx, ctx, instance, step.events.slice(1));
  const announce: Announcement[] =
    override.kind === 'evidence'
      ? [{ event, audience: 'session', name: override.available ? 'EVIDENCE_RELEASED' : 'EVIDENCE_LOCKED' }]
      : [event, ...followed].map((e) => ({ event: e, audience: 'members' }));
  return {
    result: {
      success: true as const,
      scenario: instanceView({ ...instance, state: step.state }, 'trainer'),
      event: trainingEvent(event),
      engine_events: followed.map(trainingEvent),
    },
    announce,
  };
}

export const trainingActivityRoutes: FastifyPluginAsyncTypebox<TrainingDeps> = async (app, deps) => {
  app.post(
    '/training/sessions/:session_id/events',
    {
      config: { auth: 'session', member: 'participant' },
      schema: {
        tags,
        operationId: 'recordTraineeAction',
        summary: 'Record a trainee action in an active session and run the scenario engine; a repeated client_id is answered, not recorded again (participants)',
        params: SessionParams,
        body: TraineeActionBody,
        response: { 200: RecordResult, 201: RecordResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.payload !== undefined && JSON.stringify(body.payload).length > ACTION_PAYLOAD_MAX) {
        throw errors.validation(`body.payload must be at most ${ACTION_PAYLOAD_MAX} characters as JSON`);
      }
      const answer = await changeSession(deps, request, request.params.session_id, 'participant', async (tx, ctx) => {
        const { session } = ctx;
        // A retry of a recorded action gets its answer whatever happened since (idempotent).
        const earlier = body.client_id === undefined ? undefined : await findActionByClientId(tx, session.id, body.client_id);
        if (earlier) return { result: { success: true as const, recorded: trainingEvent(earlier), duplicated: true, engine_events: [] }, announce: [] };
        if (session.status !== 'active') {
          throw ctx.role === 'trainee' && !TRAINEE_VISIBLE.has(session.status) ? noActiveSession(session) : invalidMove(session, 'record an action');
        }
        let instance: InstanceRow | undefined;
        if (body.session_scenario_id !== undefined) {
          instance = await findInstance(tx, session.id, body.session_scenario_id);
          if (!instance) throw errors.notFound(`Scenario instance ${body.session_scenario_id} of training session ${session.id}`);
          if (instance.status !== 'active') throw errors.conflict(`Scenario instance ${instance.id} is ${instance.status}, not active`, 'SCENARIO_NOT_ACTIVE');
        } else {
          instance = await findActiveInstance(tx, session.id);
        }
        const recorded = await recordSessionEvent(tx, ctx, session, body.type, {
          data: { session_scenario_id: instance?.id ?? null, target: body.target ?? null, payload: body.payload ?? null },
          ...(body.client_id !== undefined ? { clientId: body.client_id } : {}),
        });
        let engine: EventRecord[] = [];
        if (instance) {
          const step = applyAction(instance.definition, instance.state, { type: body.type, target: body.target });
          if (step.events.length > 0) await saveInstanceState(tx, instance.id, step.state);
          engine = await recordEngineEvents(tx, ctx, instance, step.events);
        }
        await touchSession(tx, session.id);
        return {
          result: { success: true as const, recorded: trainingEvent(recorded), duplicated: false, engine_events: engine.map(trainingEvent) },
          announce: [recorded, ...engine].map((event) => ({ event, audience: 'members' as const })),
        };
      });
      return reply.code(answer.duplicated ? 200 : 201).send(answer);
    },
  );

  for (const [verb, available, operationId] of [['release', true, 'releaseScenarioEvidence'], ['lock', false, 'lockScenarioEvidence']] as const) {
    app.post(
      `/training/sessions/:session_id/evidence/:key/${verb}`,
      {
        config: { auth: 'session', member: 'trainer' },
        schema: {
          tags,
          operationId,
          summary: `${available ? 'Release' : 'Lock'} an evidence item of the active scenario by hand; broadcast as EVIDENCE_${available ? 'RELEASED' : 'LOCKED'} on the session channel (assigned trainer)`,
          params: EvidenceParams,
          response: { 200: OverrideResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
        },
      },
      async (request) =>
        changeSession(deps, request, request.params.session_id, 'trainer', (tx, ctx) => applyOverride(tx, ctx, { kind: 'evidence', key: request.params.key, available })),
    );
  }

  for (const [verb, complete, operationId] of [['complete', true, 'completeObjective'], ['reset', false, 'resetObjective']] as const) {
    app.post(
      `/training/sessions/:session_id/objectives/:id/${verb}`,
      {
        config: { auth: 'session', member: 'trainer' },
        schema: {
          tags,
          operationId,
          summary: complete
            ? 'Complete an objective of the active scenario by hand; the evidence it unlocks is unlocked (assigned trainer)'
            : 'Reopen an objective of the active scenario; evidence it unlocked stays available (assigned trainer)',
          params: ObjectiveParams,
          response: { 200: OverrideResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
        },
      },
      async (request) =>
        changeSession(deps, request, request.params.session_id, 'trainer', (tx, ctx) => applyOverride(tx, ctx, { kind: 'objective', id: request.params.id, complete })),
    );
  }

  app.post(
    '/training/sessions/:session_id/inject',
    {
      config: { auth: 'session', member: 'trainer' },
      schema: {
        tags,
        operationId: 'injectInformation',
        summary: 'Inject information into a session that is not closed: a report, a statement, a message or evidence the trainee receives (assigned trainer)',
        params: SessionParams,
        body: InjectBody,
        response: { 201: InjectResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const answer = await changeSession(deps, request, request.params.session_id, 'trainer', async (tx, ctx) => {
        if (CLOSED.has(ctx.session.status)) throw invalidMove(ctx.session, 'inject information');
        const injection = await insertInjection(tx, ctx.session.id, { ...request.body, createdBy: ctx.actor.chatId });
        await touchSession(tx, ctx.session.id);
        const event = await recordSessionEvent(tx, ctx, ctx.session, 'TRAINER_INJECTED_INFORMATION', {
          data: { injection_id: injection.id, type: injection.type, title: injection.title },
        });
        return { result: { success: true as const, injection, event: trainingEvent(event) }, announce: [{ event, audience: 'members' as const }] };
      });
      return reply.code(201).send(answer);
    },
  );

  app.post(
    '/training/sessions/:session_id/notes',
    {
      config: { auth: 'session', member: 'participant' },
      schema: {
        tags,
        operationId: 'addTrainingNote',
        summary: 'Add a note: a trainer’s is private until released, a trainee’s is released at once (participants)',
        params: SessionParams,
        body: NoteBody,
        response: { 201: NoteResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const answer = await changeSession(deps, request, request.params.session_id, 'participant', async (tx, ctx) => {
        if (ctx.role === 'trainee' && !TRAINEE_VISIBLE.has(ctx.session.status)) throw noActiveSession(ctx.session);
        const note = await insertNote(tx, ctx.session.id, ctx.actor.chatId, ctx.role, request.body.body);
        // The body stays out of the event: the event log is readable beyond this session.
        const event = await recordSessionEvent(tx, ctx, ctx.session, ctx.role === 'trainer' ? 'TRAINER_NOTE_ADDED' : 'TRAINEE_NOTE_ADDED', {
          data: { note_id: note.id },
        });
        return { result: { success: true as const, note, event: trainingEvent(event) }, announce: [{ event, audience: ctx.role === 'trainer' ? ('trainer' as const) : ('members' as const) }] };
      });
      return reply.code(201).send(answer);
    },
  );

  app.post(
    '/training/sessions/:session_id/notes/:note_id/release',
    {
      config: { auth: 'session', member: 'trainer' },
      schema: {
        tags,
        operationId: 'releaseTrainingNote',
        summary: 'Release a private trainer note to the trainee (assigned trainer)',
        params: NoteParams,
        response: { 200: NoteResult, ...errorResponses(400, 404, ...COMMON_ERRORS) },
      },
    },
    async (request) =>
      changeSession(deps, request, request.params.session_id, 'trainer', async (tx, ctx) => {
        const note = await releaseNote(tx, ctx.session.id, request.params.note_id);
        if (!note) throw errors.notFound(`Note ${request.params.note_id} of training session ${ctx.session.id}`);
        const event = await recordSessionEvent(tx, ctx, ctx.session, 'TRAINER_NOTE_RELEASED', { data: { note_id: note.id } });
        return { result: { success: true as const, note, event: trainingEvent(event) }, announce: [{ event, audience: 'members' as const }] };
      }),
  );
};
