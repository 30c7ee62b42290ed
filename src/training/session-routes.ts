// Training sessions (spec: Training center, States "Training session"; issue 11): create, list,
// the role-aware payload, the controls of the state table, scenario activation and evaluation.
// Every change runs through changeSession (session-access.ts): locked, checked, recorded, announced.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { sessionAgent } from '../platform/auth/guards.js';
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { actorOf, readDb } from '../platform/http/request-context.js';
import { announce, announceOnCommit, trainingEvent } from './broadcaster.js';
import { initialState } from './engine.js';
import { changeSession, readSession, trainer, type TrainingDeps } from './session-access.js';
import { applyControl, applyEvaluation, CONTROLS, invalidMove, recordScenarioActivated, recordSessionEvent, type Control } from './session-controls.js';
import { findActiveInstance, findSession, insertInstance, listSessions, touchSession, type SessionRow } from './session-queries.js';
import {
  ActivateParams,
  ActivateResult,
  CreateSessionBody,
  Done,
  EvaluateBody,
  EvaluateResult,
  SessionList,
  SessionParams,
  SessionPayload,
} from './session-schemas.js';
import { instanceView, loadSessionPayload, roleOf, sessionView } from './session-view.js';
import { afterCommit } from '../platform/after-commit.js';

const tags = ['Training center'];

/** GET /training/sessions (spec: Limits). */
export const SESSION_LIST_LIMIT = 300;

const CONTROL_SUMMARIES: Record<Control, string> = {
  start: 'Start a pending session: the first waiting scenario becomes active (SESSION_STARTED, SCENARIO_ACTIVATED)',
  pause: 'Pause an active session; the time run so far is stored (SESSION_PAUSED)',
  resume: 'Resume a paused session (SESSION_RESUMED)',
  restart: 'Begin a fresh run of an active, paused or completed session: state wiped, evaluation cleared (SESSION_RESTARTED)',
  reset: 'Back to pending: scenarios waiting with a fresh state, clock and evaluation cleared (SESSION_RESET)',
  end: 'Complete an active or paused session (SESSION_ENDED)',
  abort: 'Abort a pending, active or paused session; the trainee lands on the no-active state (SESSION_ABORTED)',
};

async function scenarioExists(tx: Tx, id: number): Promise<boolean> {
  return (await tx.query('select 1 from training_scenarios where id = $1::bigint', [id])).rowCount > 0;
}

const scenarioNotFound = (id: number) => errors.notFound(`Training scenario ${id}`);

async function createSession(deps: TrainingDeps, request: FastifyRequest<{ Body: Static<typeof CreateSessionBody> }>): Promise<SessionRow> {
  const me = trainer(request);
  const { trainee_id: traineeId, scenario_id: scenarioId } = request.body;
  if (traineeId === me.chat_id) throw errors.validation('body.trainee_id: a trainer cannot train themselves');
  let announceLater: (() => Promise<void>) | undefined;
  const created = await request.environment.db.transaction(async (tx) => {
    // Shared lock: the trainee cannot leave onboarding before this session is committed.
    const { rows } = await tx.query<{ status: string }>('select status from agents where chat_id = $1::text for share', [traineeId]);
    if (rows.length === 0) throw errors.notFound(`Agent ${traineeId}`);
    if (rows[0]!.status !== 'onboarding') throw errors.validation(`body.trainee_id: agent ${traineeId} is ${rows[0]!.status}; only an onboarding agent can be a trainee`);
    if (scenarioId !== undefined && !(await scenarioExists(tx, scenarioId))) throw scenarioNotFound(scenarioId);
    const created = await tx.query<{ id: number }>('insert into training_sessions default values returning id');
    const id = created.rows[0]!.id;
    await tx.query(
      `insert into training_session_members (session_id, chat_id, role) values ($1::bigint, $2::text, 'trainer'), ($1::bigint, $3::text, 'trainee')`,
      [id, me.chat_id, traineeId],
    );
    if (scenarioId !== undefined) await insertInstance(tx, id, scenarioId, 'waiting', initialState);
    const ctx = { actor: actorOf(request), correlationId: request.id };
    const event = await recordSessionEvent(tx, ctx, { id, run: 1 }, 'SESSION_CREATED', {
      after: { status: 'pending' },
      data: { trainer_id: me.chat_id, trainee_id: traineeId, scenario_id: scenarioId ?? null },
    });
    const session = (await findSession(tx, id))!;
    const announcement = [{ event, audience: 'members' as const }];
    const context = { environment: request.environment.name, requestId: request.id };
    if (!(await announceOnCommit(deps, tx, context, session, announcement))) announceLater = () => announce(deps, context, session, announcement);
    return session;
  });
  if (announceLater) await afterCommit(request.environment, announceLater);
  return created;
}

export const trainingSessionRoutes: FastifyPluginAsyncTypebox<TrainingDeps> = async (app, deps) => {
  app.post(
    '/training/sessions',
    {
      config: { auth: 'session', trainer: true },
      schema: {
        tags,
        operationId: 'createTrainingSession',
        summary: 'Create a pending session for an onboarding trainee, optionally with its first scenario (trainers); 201 with the full payload',
        body: CreateSessionBody,
        response: { 201: SessionPayload, ...errorResponses(400, 404, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const session = await createSession(deps, request);
      return reply.code(201).send(await loadSessionPayload(request.environment.db, session, 'trainer'));
    },
  );

  app.get(
    '/training/sessions',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        operationId: 'listTrainingSessions',
        summary: 'Sessions the agent trained, and their own active, paused or completed ones as a trainee; newest first, at most 300',
        response: { 200: SessionList, ...errorResponses(...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const me = sessionAgent(request);
      const rows = await listSessions(readDb(request, { latest: true }), me.chat_id, SESSION_LIST_LIMIT);
      const sessions = rows.map(({ scenario_titles, active_scenario_title, ...session }) => ({
        ...sessionView(session, roleOf(session, me.chat_id)!),
        scenario_titles,
        active_scenario_title,
      }));
      return { success: true as const, sessions };
    },
  );

  app.get(
    '/training/sessions/:session_id',
    {
      config: { auth: 'session', member: 'participant' },
      schema: {
        tags,
        operationId: 'getTrainingSession',
        summary: 'The session as the caller’s role may see it: scenarios, the latest 200 events, notes, injections (participants; 403 NOT_SESSION_MEMBER otherwise)',
        params: SessionParams,
        response: { 200: SessionPayload, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { session, role } = await readSession(request, request.params.session_id);
      return loadSessionPayload(readDb(request, { latest: true }), session, role);
    },
  );

  const controlOperationIds: Record<Control, string> = {
    start: 'startTrainingSession',
    pause: 'pauseTrainingSession',
    resume: 'resumeTrainingSession',
    restart: 'restartTrainingSession',
    reset: 'resetTrainingSession',
    end: 'endTrainingSession',
    abort: 'abortTrainingSession',
  };
  for (const control of CONTROLS) {
    app.post(
      `/training/sessions/:session_id/${control}`,
      {
        config: { auth: 'session', member: 'trainer' },
        schema: { tags, operationId: controlOperationIds[control], summary: `${CONTROL_SUMMARIES[control]} (assigned trainer)`, params: SessionParams, response: { 200: Done, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) } },
      },
      async (request) =>
        changeSession(deps, request, request.params.session_id, 'trainer', async (tx, ctx) => {
          const events = await applyControl(tx, ctx, ctx.session, control);
          return { result: { success: true as const }, announce: events.map((event) => ({ event, audience: 'members' as const })) };
        }),
    );
  }

  app.post(
    '/training/sessions/:session_id/scenarios/:scenario_id/activate',
    {
      config: { auth: 'session', member: 'trainer' },
      schema: {
        tags,
        operationId: 'activateScenario',
        summary: 'Activate a scenario of the catalog in a pending, active or paused session; the active one is completed (assigned trainer)',
        params: ActivateParams,
        response: { 200: ActivateResult, ...errorResponses(400, 404, 409, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const scenarioId = request.params.scenario_id;
      return changeSession(deps, request, request.params.session_id, 'trainer', async (tx, ctx) => {
        const { session } = ctx;
        if (!['pending', 'active', 'paused'].includes(session.status)) throw invalidMove(session, 'activate a scenario');
        if (!(await scenarioExists(tx, scenarioId))) throw scenarioNotFound(scenarioId);
        const present = await tx.query('select 1 from training_session_scenarios where session_id = $1::bigint and scenario_id = $2::bigint', [session.id, scenarioId]);
        if (present.rowCount > 0) throw errors.conflict(`Scenario ${scenarioId} is already in training session ${session.id}`, 'SCENARIO_ALREADY_IN_SESSION');
        const previous = await findActiveInstance(tx, session.id);
        if (previous) {
          await tx.query(`update training_session_scenarios set status = 'completed', completed_at = now(), updated_at = now() where id = $1::bigint`, [previous.id]);
        }
        const instance = await insertInstance(tx, session.id, scenarioId, 'active', initialState);
        await touchSession(tx, session.id);
        const event = await recordScenarioActivated(tx, ctx, session, instance, previous);
        return {
          result: { success: true as const, scenario: instanceView(instance, 'trainer'), event: trainingEvent(event) },
          announce: [{ event, audience: 'members' as const }],
        };
      });
    },
  );

  app.post(
    '/training/sessions/:session_id/evaluate',
    {
      config: { auth: 'session', member: 'trainer' },
      schema: {
        tags,
        operationId: 'evaluateTrainingSession',
        summary: 'Grade the session and complete it: score 0 to 100, pass or fail, comments for the trainer, feedback for the trainee (assigned trainer)',
        params: SessionParams,
        body: EvaluateBody,
        response: { 200: EvaluateResult, ...errorResponses(400, 404, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) =>
      changeSession(deps, request, request.params.session_id, 'trainer', async (tx, ctx) => {
        const event = await applyEvaluation(tx, { ...ctx, evaluator: ctx.actor.chatId }, ctx.session, request.body);
        const session = (await findSession(tx, ctx.session.id))!;
        return {
          result: { success: true as const, session: sessionView(session, 'trainer'), event: trainingEvent(event) },
          announce: [{ event, audience: 'members' as const }],
        };
      }),
  );
};
