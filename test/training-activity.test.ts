// Inside a training session (spec: Training center; issue 11): trainee actions through the
// scenario engine, the trainer's overrides, injections, notes, evaluation, and what each role sees.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import type { Person } from './helpers/identity.js';
import { createSession, get, importDemoScenarios, instanceStates, newTrainee, newTrainer, post, RecordingBroadcaster, sessionEventTypes } from './helpers/training.js';

describe('training session activity', () => {
  const broadcaster = new RecordingBroadcaster();
  let t: TestApp;
  let trainer: Person;
  let scenarios: Record<string, number>;
  let id: number;
  let trainee: Person;
  const url = (path: string) => `/training/sessions/${id}/${path}`;
  const detail = () => `/training/sessions/${id}`;
  const eventCount = async () => (await t.db.production.query<{ n: number }>('select count(*)::int as n from events where training_session_id = $1::bigint', [id])).rows[0]!.n;

  // Warnings and errors of the app, as JSON lines.
  const logged: string[] = [];
  const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => void (logged.push(String(chunk)), done()) }));

  beforeAll(async () => {
    t = await createTestApp({ broadcaster, logger });
    scenarios = await importDemoScenarios(t.db.production);
    trainer = await newTrainer(t);
  });
  afterAll(() => t.close());
  // A fresh active session on first-response for every test.
  beforeEach(async () => {
    trainee = await newTrainee(t);
    id = await createSession(t, trainer, trainee, scenarios['first-response']);
    await post(t, url('start'), trainer);
    broadcaster.take();
  });

  describe('POST …/events', () => {
    it('records the action, completes the matching objective and unlocks what it unlocks, in one answer; both users hear it', async () => {
      const opened = await post(t, url('events'), trainee, { type: 'OPEN_EVIDENCE', target: 'chat-log', client_id: 'c-1' });
      expect(opened.statusCode).toBe(201);
      expect(opened.json()).toMatchObject({
        success: true,
        duplicated: false,
        recorded: { type: 'OPEN_EVIDENCE', actor_chat_id: trainee.agent.chat_id, client_id: 'c-1', data: { session_id: id, target: 'chat-log' } },
        engine_events: [{ type: 'OBJECTIVE_COMPLETED', data: { objective: 'read-log', by: 'engine' } }],
      });
      const contacted = await post(t, url('events'), trainee, { type: 'CONTACT_PARTY', target: 'reporter', payload: { message: 'Can you tell me more?' } });
      expect(contacted.json().engine_events.map((e: { type: string; data: object }) => [e.type, e.data])).toEqual([
        ['OBJECTIVE_COMPLETED', expect.objectContaining({ objective: 'contact-reporter' })],
        ['EVIDENCE_UNLOCKED', expect.objectContaining({ evidence: 'witness' })],
      ]);
      expect(await instanceStates(t.db.production, id)).toEqual([
        { slug: 'first-response', status: 'active', state: { completed_objectives: ['read-log', 'contact-reporter'], available_evidence: ['chat-log', 'witness'] } },
      ]);
      expect((await sessionEventTypes(t.db.production, id)).slice(-5)).toEqual(['OPEN_EVIDENCE', 'OBJECTIVE_COMPLETED', 'CONTACT_PARTY', 'OBJECTIVE_COMPLETED', 'EVIDENCE_UNLOCKED']);
      const sent = broadcaster.take();
      expect(sent).toHaveLength(10);
      expect(sent.slice(0, 2)).toEqual([`training:user:${trainer.agent.chat_id} OPEN_EVIDENCE`, `training:user:${trainee.agent.chat_id} OPEN_EVIDENCE`]);
    });

    it('answers a repeated client_id with the first record and records nothing; opening locked evidence completes nothing', async () => {
      const first = await post(t, url('events'), trainee, { type: 'ADD_FINDING', client_id: 'same' });
      const before = await eventCount();
      const again = await post(t, url('events'), trainee, { type: 'ADD_FINDING', client_id: 'same' });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual({ success: true, duplicated: true, recorded: first.json().recorded, engine_events: [] });
      expect(await eventCount()).toBe(before);
      expect(broadcaster.take()).toHaveLength(2);
      const locked = await post(t, url('events'), trainee, { type: 'OPEN_EVIDENCE', target: 'witness' });
      expect([locked.statusCode, locked.json().engine_events]).toEqual([201, []]);
      expect((await instanceStates(t.db.production, id))[0]!.state.completed_objectives).toEqual([]);
    });

    it('refuses actions outside the whitelist and bad fields with 400, an inactive session with 409, strangers with 403', async () => {
      const before = await eventCount();
      for (const [body, field] of [
        [{ type: 'DELETE_EVERYTHING' }, 'body.type'],
        [{}, 'type'],
        [{ type: 'ADD_FINDING', target: 'x'.repeat(201) }, 'body.target'],
        [{ type: 'ADD_FINDING', session_scenario_id: 'one' }, 'body.session_scenario_id'],
        [{ type: 'ADD_FINDING', payload: 'text' }, 'body.payload'],
        [{ type: 'ADD_FINDING', payload: { text: 'y'.repeat(4000) } }, 'body.payload'],
        [{ type: 'ADD_FINDING', actor: trainer.agent.chat_id }, 'actor'],
      ] as const) {
        const res = await post(t, url('events'), trainee, body);
        expect(res.statusCode, JSON.stringify(body).slice(0, 60)).toBe(400);
        expect(res.json().error).toContain(field);
      }
      const other = await post(t, url('events'), trainee, { type: 'ADD_FINDING', session_scenario_id: 999999 });
      expect([other.statusCode, other.json().error]).toEqual([404, `Scenario instance 999999 of training session ${id} not found`]);
      await post(t, url('pause'), trainer);
      const paused = await post(t, url('events'), trainee, { type: 'ADD_FINDING' });
      expect(paused.json()).toEqual({ success: false, error: `Training session ${id} is paused: cannot record an action`, code: 'INVALID_SESSION_STATE' });
      const stranger = await post(t, url('events'), await newTrainee(t, 'Stranger'), { type: 'ADD_FINDING' });
      expect([stranger.statusCode, stranger.json().code]).toEqual([403, 'NOT_SESSION_MEMBER']);
      expect(await eventCount()).toBe(before + 1); // SESSION_PAUSED
    });
  });

  describe('trainer overrides', () => {
    it('releases and locks evidence (TRAINER_* recorded, EVIDENCE_RELEASED / EVIDENCE_LOCKED on the session channel); 404 unknown key', async () => {
      const released = await post(t, url('evidence/witness/release'), trainer);
      expect(released.statusCode).toBe(200);
      expect(released.json()).toMatchObject({ scenario: { state: { available_evidence: ['chat-log', 'witness'] } }, event: { type: 'TRAINER_RELEASED_EVIDENCE', data: { evidence: 'witness', changed: true } }, engine_events: [] });
      expect(broadcaster.take()).toEqual([`training:session:${id} EVIDENCE_RELEASED`]);
      const locked = await post(t, url('evidence/chat-log/lock'), trainer);
      expect(locked.json().scenario.state.available_evidence).toEqual(['witness']);
      expect(broadcaster.take()).toEqual([`training:session:${id} EVIDENCE_LOCKED`]);
      expect((await sessionEventTypes(t.db.production, id)).slice(-2)).toEqual(['TRAINER_RELEASED_EVIDENCE', 'TRAINER_LOCKED_EVIDENCE']);
      const unknown = await post(t, url('evidence/nothing/release'), trainer);
      expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'Evidence "nothing" of the active scenario not found']);
      expect((await post(t, url('evidence/witness/lock'), trainee)).statusCode).toBe(403);
      expect((await instanceStates(t.db.production, id))[0]!.state.available_evidence).toEqual(['witness']);
    });

    it('completes an objective by hand (with what it unlocks) and resets it; 404 unknown objective; 409 without an active scenario', async () => {
      const done = await post(t, url('objectives/contact-reporter/complete'), trainer);
      expect(done.json()).toMatchObject({
        event: { type: 'TRAINER_COMPLETED_OBJECTIVE', data: { objective: 'contact-reporter' } },
        engine_events: [{ type: 'EVIDENCE_UNLOCKED', data: { evidence: 'witness' } }],
      });
      expect(broadcaster.take()).toEqual([
        `training:user:${trainer.agent.chat_id} TRAINER_COMPLETED_OBJECTIVE`,
        `training:user:${trainee.agent.chat_id} TRAINER_COMPLETED_OBJECTIVE`,
        `training:user:${trainer.agent.chat_id} EVIDENCE_UNLOCKED`,
        `training:user:${trainee.agent.chat_id} EVIDENCE_UNLOCKED`,
      ]);
      const reset = await post(t, url('objectives/contact-reporter/reset'), trainer);
      expect(reset.json()).toMatchObject({ event: { type: 'TRAINER_RESET_OBJECTIVE' }, scenario: { state: { completed_objectives: [], available_evidence: ['chat-log', 'witness'] } } });
      const unknown = await post(t, url('objectives/fly/complete'), trainer);
      expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'Objective "fly" of the active scenario not found']);
      const bare = await createSession(t, trainer, await newTrainee(t));
      const none = await post(t, `/training/sessions/${bare}/objectives/read-log/complete`, trainer);
      expect([none.statusCode, none.json().code]).toEqual([409, 'NO_ACTIVE_SCENARIO']);
    });
  });

  describe('injections, notes and evaluation', () => {
    it('injects information for both users; 400 for a bad type or over-long text, 409 once closed', async () => {
      const res = await post(t, url('inject'), trainer, { type: 'witness_statement', title: 'A new witness', content: 'I saw it too.' });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ injection: { type: 'witness_statement', title: 'A new witness', content: 'I saw it too.', created_by: trainer.agent.chat_id }, event: { type: 'TRAINER_INJECTED_INFORMATION' } });
      expect(broadcaster.take()).toEqual([`training:user:${trainer.agent.chat_id} TRAINER_INJECTED_INFORMATION`, `training:user:${trainee.agent.chat_id} TRAINER_INJECTED_INFORMATION`]);
      for (const [body, field] of [
        [{ type: 'rumour', content: 'x' }, 'body.type'],
        [{ type: 'custom_message', content: 'x'.repeat(2001) }, 'body.content'],
        [{ type: 'custom_message', content: '' }, 'body.content'],
        [{ type: 'custom_message', content: 'x', title: 't'.repeat(121) }, 'body.title'],
      ] as const) {
        const bad = await post(t, url('inject'), trainer, body);
        expect([bad.statusCode, bad.json().error.includes(field)]).toEqual([400, true]);
      }
      expect((await post(t, url('inject'), trainee, { type: 'custom_message', content: 'x' })).statusCode).toBe(403);
      await post(t, url('end'), trainer);
      expect((await post(t, url('inject'), trainer, { type: 'custom_message', content: 'late' })).statusCode).toBe(409);
      const { rows } = await t.db.production.query('select type from training_injections where session_id = $1::bigint', [id]);
      expect(rows).toEqual([{ type: 'witness_statement' }]);
    });

    it('keeps a trainer note private until released; a trainee note is released at once; 404 unknown note; 400 bad body', async () => {
      const privateNote = await post(t, url('notes'), trainer, { body: 'Watch whether they check the log first.' });
      expect(privateNote.statusCode).toBe(201);
      expect(privateNote.json()).toMatchObject({ note: { author_role: 'trainer', released: false, released_at: null }, event: { type: 'TRAINER_NOTE_ADDED', data: { note_id: privateNote.json().note.id } } });
      expect(broadcaster.take()).toEqual([`training:user:${trainer.agent.chat_id} TRAINER_NOTE_ADDED`]);
      const own = await post(t, url('notes'), trainee, { body: 'The log looks one-sided.' });
      expect(own.json()).toMatchObject({ note: { author_role: 'trainee', released: true }, event: { type: 'TRAINEE_NOTE_ADDED' } });
      const seen = (await get(t, detail(), trainee)).json();
      expect(seen.notes.map((n: { body: string }) => n.body)).toEqual(['The log looks one-sided.']);
      expect(seen.events.map((e: { type: string }) => e.type)).not.toContain('TRAINER_NOTE_ADDED');
      expect((await get(t, detail(), trainer)).json().notes).toHaveLength(2);
      const released = await post(t, url(`notes/${privateNote.json().note.id}/release`), trainer);
      expect(released.json()).toMatchObject({ note: { released: true }, event: { type: 'TRAINER_NOTE_RELEASED' } });
      expect((await get(t, detail(), trainee)).json().notes).toHaveLength(2);
      const unknown = await post(t, url('notes/999999/release'), trainer);
      expect([unknown.statusCode, unknown.json().error]).toEqual([404, `Note 999999 of training session ${id} not found`]);
      for (const body of [{}, { body: '' }, { body: 'n'.repeat(1001) }]) expect((await post(t, url('notes'), trainee, body)).statusCode).toBe(400);
      // Nothing of a note's text in the event log, which is readable beyond the session.
      const { rows } = await t.db.production.query(`select 1 from events where training_session_id = $1::bigint and data::text like '%log first%'`, [id]);
      expect(rows).toEqual([]);
    });

    it('evaluates: the trainer sees the comments, the trainee the score, result and released feedback; bad grades are 400; a trainee cannot grade', async () => {
      for (const body of [{ score: 101, result: 'pass' }, { score: -1, result: 'pass' }, { score: 50.5, result: 'pass' }, { score: 50, result: 'maybe' }, { score: 50, result: 'pass', comments: 'c'.repeat(2001) }, { result: 'pass' }]) {
        expect((await post(t, url('evaluate'), trainer, body)).statusCode).toBe(400);
      }
      expect((await post(t, url('evaluate'), trainee, { score: 100, result: 'pass' })).statusCode).toBe(403);
      const res = await post(t, url('evaluate'), trainer, { score: 82, result: 'pass', comments: 'Hesitant on contact.', released_feedback: 'Good work; contact earlier.' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ session: { status: 'completed', evaluation: { score: 82, result: 'pass', comments: 'Hesitant on contact.', evaluated_by: trainer.agent.chat_id } }, event: { type: 'SESSION_EVALUATED', data: { score: 82, result: 'pass' } } });
      expect(JSON.stringify(res.json().event)).not.toContain('Hesitant');
      expect(broadcaster.take()).toEqual([`training:user:${trainer.agent.chat_id} SESSION_EVALUATED`, `training:user:${trainee.agent.chat_id} SESSION_EVALUATED`]);
      const seen = (await get(t, detail(), trainee)).json();
      expect(seen.session.evaluation).toEqual({ score: 82, result: 'pass', released_feedback: 'Good work; contact earlier.', evaluated_at: expect.any(String), evaluated_by: trainer.agent.chat_id });
    });
  });

  it('shows a trainee the briefing, objective titles and only the content of evidence they may open', async () => {
    const seen = (await get(t, detail(), trainee)).json();
    expect(seen.active_scenario.definition).toEqual({
      briefing: expect.stringContaining('harassment'),
      objectives: [
        { id: 'read-log', title: 'Read the chat log', completed: false },
        { id: 'contact-reporter', title: 'Contact the reporter', completed: false },
        { id: 'decide', title: 'Validate or invalidate the report', completed: false },
      ],
      evidence: [
        { key: 'chat-log', title: 'Chat log excerpt', available: true, content: expect.stringContaining('NightOwl_88') },
        { key: 'witness', title: 'Witness statement', available: false },
      ],
    });
    expect(JSON.stringify(seen)).not.toContain('BlueFalcon');
    expect(JSON.stringify(seen)).not.toContain('complete_when');
    const full = (await get(t, detail(), trainer)).json();
    expect(full.active_scenario.definition.evidence[1]).toMatchObject({ content: expect.stringContaining('BlueFalcon'), unlock_when: { objective: 'contact-reporter' } });
  });

  it('keeps only the latest 200 events in the payload', async () => {
    const values = Array.from({ length: 230 }, (_, i) => `('ADD_FINDING', 'agent', '${trainee.agent.chat_id}', 'bulk', ${id}, '{"n": ${i}}'::jsonb)`).join(', ');
    await t.db.production.exec(`insert into events (type, actor_kind, actor_chat_id, correlation_id, training_session_id, data) values ${values}`);
    const events = (await get(t, detail(), trainer)).json().events as { id: number; data: { n?: number } }[];
    expect(events).toHaveLength(200);
    expect(events.at(-1)!.data.n).toBe(229);
    expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort((a, b) => a - b));
  });

  it('a failed broadcast is logged and the request still succeeds with its change committed', async () => {
    broadcaster.failWith = new Error('realtime down');
    try {
      const res = await post(t, url('pause'), trainer);
      expect(res.statusCode).toBe(200);
      expect((await sessionEventTypes(t.db.production, id)).at(-1)).toBe('SESSION_PAUSED');
      const line = JSON.parse(logged.find((l) => l.includes('training broadcast failed'))!);
      expect(line).toMatchObject({ level: 40, session_id: id, events: ['SESSION_PAUSED', 'SESSION_PAUSED'], err: { message: 'realtime down' }, request_id: expect.any(String) });
    } finally {
      broadcaster.failWith = undefined;
    }
  });
});
