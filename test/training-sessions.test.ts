// Training sessions (spec: Training center, States "Training session"; issue 11): creation, the
// list, the role-aware payload and every transition of the state table with its events and
// broadcasts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CONTROLS, TRANSITIONS, type Control } from '../src/training/session-controls.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import {
  createSession,
  get,
  importDemoScenarios,
  instanceStates,
  newTrainee,
  newTrainer,
  post,
  RecordingBroadcaster,
  sessionEventTypes,
  sessionRow,
} from './helpers/training.js';

const STATUSES = ['pending', 'active', 'paused', 'completed', 'aborted'] as const;

describe('training sessions', () => {
  const broadcaster = new RecordingBroadcaster();
  let t: TestApp;
  let trainer: Person;
  let trainee: Person;
  let scenarios: Record<string, number>;

  beforeAll(async () => {
    t = await createTestApp({ broadcaster });
    scenarios = await importDemoScenarios(t.db.production);
    trainer = await newTrainer(t);
    trainee = await newTrainee(t);
  });
  afterAll(() => t.close());
  beforeEach(() => void broadcaster.take());

  /** A session of a fresh trainee brought to `status` through the routes. */
  async function sessionIn(status: (typeof STATUSES)[number]): Promise<{ id: number; trainee: Person }> {
    const learner = await newTrainee(t, `Trainee for ${status}`);
    const id = await createSession(t, trainer, learner, scenarios['first-response']);
    const path: Control[] = { pending: [], active: ['start'], paused: ['start', 'pause'], completed: ['start', 'end'], aborted: ['abort'] }[status] as Control[];
    for (const control of path) expect((await post(t, `/training/sessions/${id}/${control}`, trainer)).statusCode).toBe(200);
    broadcaster.take();
    return { id, trainee: learner };
  }

  describe('POST /training/sessions', () => {
    it('creates a pending session with its members and first scenario waiting; 201 with the full payload, SESSION_CREATED to both users', async () => {
      const res = await post(t, '/training/sessions', trainer, { trainee_id: trainee.agent.chat_id, scenario_id: scenarios['first-response'] });
      expect(res.statusCode).toBe(201);
      const body = res.json();
      const id = body.session.id as number;
      expect(body).toMatchObject({
        success: true,
        role: 'trainer',
        session: { status: 'pending', run: 1, elapsed_ms: 0, trainer_id: trainer.agent.chat_id, trainer_name: 'Jordan Pike', trainee_id: trainee.agent.chat_id, trainee_name: 'Casey Newman', evaluation: null },
        active_scenario: null,
        scenarios: [{ slug: 'first-response', status: 'waiting', position: 1, state: { completed_objectives: [], available_evidence: ['chat-log'] } }],
        notes: [],
        injections: [],
      });
      expect(body.events.map((e: { type: string }) => e.type)).toEqual(['SESSION_CREATED']);
      expect(body.events[0]).toMatchObject({ actor_chat_id: trainer.agent.chat_id, data: { session_id: id, trainee_id: trainee.agent.chat_id } });
      const { rows } = await t.db.production.query('select chat_id, role from training_session_members where session_id = $1::bigint order by role', [id]);
      expect(rows).toEqual([
        { chat_id: trainee.agent.chat_id, role: 'trainee' },
        { chat_id: trainer.agent.chat_id, role: 'trainer' },
      ]);
      expect(broadcaster.take()).toEqual([`training:user:${trainer.agent.chat_id} SESSION_CREATED`, `training:user:${trainee.agent.chat_id} SESSION_CREATED`]);
    });

    it('refuses a trainee who is not onboarding (400), an unknown agent or scenario (404), a non-trainer (403) and bad bodies (400), writing nothing', async () => {
      const before = await t.db.production.query<{ n: number }>('select count(*)::int as n from training_sessions');
      const active = await signedIn(t, { rank: 'Agent' });
      const notOnboarding = await post(t, '/training/sessions', trainer, { trainee_id: active.agent.chat_id });
      expect(notOnboarding.statusCode).toBe(400);
      expect(notOnboarding.json()).toEqual({ success: false, error: `body.trainee_id: agent ${active.agent.chat_id} is active; only an onboarding agent can be a trainee`, code: 'VALIDATION_ERROR' });
      const unknown = await post(t, '/training/sessions', trainer, { trainee_id: chatId() });
      expect([unknown.statusCode, unknown.json().code]).toEqual([404, 'NOT_FOUND']);
      const noScenario = await post(t, '/training/sessions', trainer, { trainee_id: trainee.agent.chat_id, scenario_id: 999_999 });
      expect([noScenario.statusCode, noScenario.json().error]).toEqual([404, 'Training scenario 999999 not found']);
      const notTrainer = await post(t, '/training/sessions', active, { trainee_id: trainee.agent.chat_id });
      expect([notTrainer.statusCode, notTrainer.json().code]).toEqual([403, 'TRAINER_REQUIRED']);
      for (const [body, field] of [
        [{}, 'trainee_id'],
        [{ trainee_id: 42 }, 'trainee_id'],
        [{ trainee_id: trainee.agent.chat_id, scenario_id: 'one' }, 'scenario_id'],
        [{ trainee_id: trainee.agent.chat_id, trainer_id: trainer.agent.chat_id }, 'trainer_id'],
      ] as const) {
        const res = await post(t, '/training/sessions', trainer, body);
        expect(res.statusCode).toBe(400);
        expect(res.json().error).toContain(field);
      }
      const after = await t.db.production.query<{ n: number }>('select count(*)::int as n from training_sessions');
      expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
      expect(broadcaster.take()).toEqual([]);
    });
  });

  describe('the state table', () => {
    // Every control from every status: allowed moves land where the table says, others are 409.
    for (const control of CONTROLS) {
      for (const status of STATUSES) {
        const move = TRANSITIONS[control];
        const allowed = move.from.includes(status);
        it(`${control} from ${status}: ${allowed ? move.to : '409'}`, async () => {
          const { id, trainee: learner } = await sessionIn(status);
          const events = await sessionEventTypes(t.db.production, id);
          const res = await post(t, `/training/sessions/${id}/${control}`, trainer);
          if (!allowed) {
            expect(res.statusCode).toBe(409);
            expect(res.json()).toEqual({ success: false, error: `Training session ${id} is ${status}: cannot ${control}`, code: 'INVALID_SESSION_STATE' });
            expect((await sessionRow(t.db.production, id))!.status).toBe(status);
            expect(await sessionEventTypes(t.db.production, id)).toEqual(events);
            expect(broadcaster.take()).toEqual([]);
            return;
          }
          expect(res.statusCode).toBe(200);
          expect(res.json()).toEqual({ success: true });
          expect((await sessionRow(t.db.production, id))!.status).toBe(move.to);
          const added = (await sessionEventTypes(t.db.production, id)).slice(events.length);
          expect(added[0]).toBe(move.event);
          const sent = broadcaster.take();
          expect(sent).toEqual(added.flatMap((e) => [`training:user:${trainer.agent.chat_id} ${e}`, `training:user:${learner.agent.chat_id} ${e}`]));
        });
      }
    }

    it('start activates the first waiting scenario (SESSION_STARTED, SCENARIO_ACTIVATED); pause banks the elapsed time, resume runs the clock again', async () => {
      const { id } = await sessionIn('pending');
      expect((await post(t, `/training/sessions/${id}/start`, trainer)).statusCode).toBe(200);
      expect((await sessionEventTypes(t.db.production, id)).slice(-2)).toEqual(['SESSION_STARTED', 'SCENARIO_ACTIVATED']);
      expect((await instanceStates(t.db.production, id)).map((i) => i.status)).toEqual(['active']);
      // An hour of activity, as if the session had started an hour ago.
      await t.db.production.query(`update training_sessions set running_since = now() - interval '1 hour' where id = $1::bigint`, [id]);
      await post(t, `/training/sessions/${id}/pause`, trainer);
      const paused = (await sessionRow(t.db.production, id))!;
      expect(paused.running_since).toBeNull();
      expect(paused.elapsed_ms).toBeGreaterThanOrEqual(3_600_000);
      expect(paused.elapsed_ms).toBeLessThan(3_660_000);
      const view = (await get(t, `/training/sessions/${id}`, trainer)).json();
      expect(view.session.elapsed_ms).toBe(paused.elapsed_ms);
      await post(t, `/training/sessions/${id}/resume`, trainer);
      const resumed = (await sessionRow(t.db.production, id))!;
      expect([resumed.status, resumed.elapsed_ms, resumed.running_since !== null]).toEqual(['active', paused.elapsed_ms, true]);
    });

    it('restart begins a fresh run (state, clock and evaluation wiped; first scenario active); reset goes back to pending with scenarios waiting', async () => {
      const { id } = await sessionIn('active');
      await post(t, `/training/sessions/${id}/events`, trainer, { type: 'OPEN_EVIDENCE', target: 'chat-log' });
      await post(t, `/training/sessions/${id}/evaluate`, trainer, { score: 70, result: 'pass', comments: 'ok' });
      expect(await sessionRow(t.db.production, id)).toMatchObject({ status: 'completed', score: 70, run: 1 });
      expect((await post(t, `/training/sessions/${id}/restart`, trainer)).statusCode).toBe(200);
      expect(await sessionRow(t.db.production, id)).toMatchObject({ status: 'active', score: null, run: 2, elapsed_ms: 0 });
      expect(await instanceStates(t.db.production, id)).toEqual([{ slug: 'first-response', status: 'active', state: { completed_objectives: [], available_evidence: ['chat-log'] } }]);
      const payload = (await get(t, `/training/sessions/${id}`, trainer)).json();
      expect(payload.session.evaluation).toBeNull();
      expect(payload.events.at(-1)).toMatchObject({ type: 'SCENARIO_ACTIVATED', data: { run: 2 } });
      expect((await post(t, `/training/sessions/${id}/reset`, trainer)).statusCode).toBe(200);
      expect(await sessionRow(t.db.production, id)).toMatchObject({ status: 'pending', run: 3, elapsed_ms: 0, running_since: null });
      expect((await instanceStates(t.db.production, id)).map((i) => i.status)).toEqual(['waiting']);
    });

    it('evaluate completes the session from any status', async () => {
      for (const status of STATUSES) {
        const { id } = await sessionIn(status);
        const res = await post(t, `/training/sessions/${id}/evaluate`, trainer, { score: 55, result: 'fail' });
        expect(res.statusCode).toBe(200);
        expect(res.json().session).toMatchObject({ status: 'completed', evaluation: { score: 55, result: 'fail', comments: null, released_feedback: null } });
        expect((await sessionEventTypes(t.db.production, id)).at(-1)).toBe('SESSION_EVALUATED');
      }
    });
  });

  describe('access', () => {
    it('keeps the controls to the assigned trainer: the trainee, another trainer or agent 403, the bot key 403', async () => {
      const { id, trainee: learner } = await sessionIn('active');
      const own = await post(t, `/training/sessions/${id}/pause`, learner);
      expect(own.json()).toEqual({ success: false, error: 'Only the assigned trainer may do this', code: 'NOT_SESSION_TRAINER' });
      expect(own.statusCode).toBe(403);
      const stranger = await signedIn(t, { rank: 'Director', clearance: 5 });
      for (const person of [stranger, await newTrainer(t, 'Other Trainer')]) {
        const res = await post(t, `/training/sessions/${id}/pause`, person);
        expect(res.statusCode).toBe(403);
        expect(res.json()).toEqual({ success: false, error: 'Only the assigned trainer may do this', code: 'NOT_SESSION_TRAINER' });
        const read = await get(t, `/training/sessions/${id}`, person);
        expect([read.statusCode, read.json().code]).toEqual([403, 'NOT_SESSION_MEMBER']);
      }
      const bot = await t.app.inject({ method: 'POST', url: `/training/sessions/${id}/pause`, headers: { host: 'localhost', authorization: PRODUCTION_KEY } });
      expect([bot.statusCode, bot.json().code]).toEqual([403, 'SESSION_REQUIRED']);
      const botRead = await t.app.inject({ method: 'GET', url: '/training/sessions', headers: { host: 'localhost', authorization: PRODUCTION_KEY } });
      expect(botRead.statusCode).toBe(403);
      expect((await sessionRow(t.db.production, id))!.status).toBe('active');
      expect((await get(t, '/training/sessions/999999', trainer)).statusCode).toBe(404);
      expect((await get(t, '/training/sessions/abc', trainer)).statusCode).toBe(400);
    });

    it('a trainee reads a pending or aborted session as 409 NO_ACTIVE_SESSION, and an active one filtered for them', async () => {
      for (const status of ['pending', 'aborted'] as const) {
        const { id, trainee: learner } = await sessionIn(status);
        const res = await get(t, `/training/sessions/${id}`, learner);
        expect(res.statusCode).toBe(409);
        expect(res.json()).toEqual({ success: false, error: `Training session ${id} is ${status}: there is no active session for you to join`, code: 'NO_ACTIVE_SESSION' });
      }
      const { id, trainee: learner } = await sessionIn('active');
      const res = await get(t, `/training/sessions/${id}`, learner);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ role: 'trainee', session: { id, status: 'active' } });
    });
  });

  describe('GET /training/sessions', () => {
    it('lists what the trainer trained and what the trainee may see, newest first, with names and scenario titles', async () => {
      const coach = await newTrainer(t, 'Coach Lee');
      const learner = await newTrainee(t, 'Sam Learner');
      const ids: Record<string, number> = {};
      for (const status of ['pending', 'active', 'completed', 'aborted', 'paused'] as const) {
        ids[status] = await createSession(t, coach, learner, scenarios['ban-evasion']);
        const path = { pending: [], active: ['start'], paused: ['start', 'pause'], completed: ['start', 'end'], aborted: ['abort'] }[status];
        for (const control of path) await post(t, `/training/sessions/${ids[status]}/${control}`, coach);
      }
      const mine = (await get(t, '/training/sessions', coach)).json();
      expect(mine.sessions.map((s: { id: number }) => s.id)).toEqual([ids.paused, ids.aborted, ids.completed, ids.active, ids.pending]);
      expect(mine.sessions[0]).toMatchObject({ trainer_name: 'Coach Lee', trainee_name: 'Sam Learner', scenario_titles: ['Ban evasion with an alternate account'], active_scenario_title: 'Ban evasion with an alternate account' });
      const theirs = (await get(t, '/training/sessions', learner)).json();
      expect(theirs.sessions.map((s: { id: number; status: string }) => [s.id, s.status])).toEqual([
        [ids.paused, 'paused'],
        [ids.completed, 'completed'],
        [ids.active, 'active'],
      ]);
      const other = (await get(t, '/training/sessions', await newTrainer(t, 'Nobody'))).json();
      expect(other).toEqual({ success: true, sessions: [] });
    });
  });

  describe('POST …/scenarios/<scenario_id>/activate', () => {
    it('completes the active child and activates the scenario (SCENARIO_ACTIVATED to both users); 409 twice or closed; 404 unknown', async () => {
      const { id, trainee: learner } = await sessionIn('active');
      const res = await post(t, `/training/sessions/${id}/scenarios/${scenarios['ban-evasion']}/activate`, trainer);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ success: true, scenario: { slug: 'ban-evasion', status: 'active', position: 2 }, event: { type: 'SCENARIO_ACTIVATED' } });
      expect((await instanceStates(t.db.production, id)).map((i) => [i.slug, i.status])).toEqual([
        ['first-response', 'completed'],
        ['ban-evasion', 'active'],
      ]);
      expect(broadcaster.take()).toEqual([`training:user:${trainer.agent.chat_id} SCENARIO_ACTIVATED`, `training:user:${learner.agent.chat_id} SCENARIO_ACTIVATED`]);
      const again = await post(t, `/training/sessions/${id}/scenarios/${scenarios['ban-evasion']}/activate`, trainer);
      expect([again.statusCode, again.json().code]).toEqual([409, 'SCENARIO_ALREADY_IN_SESSION']);
      const unknown = await post(t, `/training/sessions/${id}/scenarios/999999/activate`, trainer);
      expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'Training scenario 999999 not found']);
      const done = await sessionIn('completed');
      const closed = await post(t, `/training/sessions/${done.id}/scenarios/${scenarios['ban-evasion']}/activate`, trainer);
      expect([closed.statusCode, closed.json().code]).toEqual([409, 'INVALID_SESSION_STATE']);
      expect((await instanceStates(t.db.production, done.id)).map((i) => i.slug)).toEqual(['first-response']);
      const pending = await sessionIn('pending');
      expect((await post(t, `/training/sessions/${pending.id}/scenarios/${scenarios['appeal-review']}/activate`, trainer)).statusCode).toBe(200);
    });
  });
});
