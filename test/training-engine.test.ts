// The scenario engine as a pure function (issue 11): objectives completed by matching trainee
// actions, evidence unlocked by completed objectives, the trainer's overrides.
import { describe, expect, it } from 'vitest';
import { DEMO_SCENARIOS } from '../src/demo/seed-scenarios.js';
import { applyAction, completeObjective, initialState, resetObjective, setEvidence } from '../src/training/engine.js';

const firstResponse = DEMO_SCENARIOS[0]!.definition;
const banEvasion = DEMO_SCENARIOS[1]!.definition;

describe('the scenario engine', () => {
  it('starts with only the unlocked evidence available and nothing completed', () => {
    expect(initialState(firstResponse)).toEqual({ completed_objectives: [], available_evidence: ['chat-log'] });
  });

  it('completes the objective an action matches, by type and target', () => {
    const start = initialState(firstResponse);
    const opened = applyAction(firstResponse, start, { type: 'OPEN_EVIDENCE', target: 'chat-log' });
    expect(opened).toEqual({
      state: { completed_objectives: ['read-log'], available_evidence: ['chat-log'] },
      events: [{ type: 'OBJECTIVE_COMPLETED', objective: 'read-log', by: 'engine' }],
    });
    // The wrong party completes nothing; the right one completes and unlocks the witness.
    expect(applyAction(firstResponse, opened.state, { type: 'CONTACT_PARTY', target: 'reported' })).toEqual({ state: opened.state, events: [] });
    expect(applyAction(firstResponse, opened.state, { type: 'CONTACT_PARTY', target: 'reporter' })).toEqual({
      state: { completed_objectives: ['read-log', 'contact-reporter'], available_evidence: ['chat-log', 'witness'] },
      events: [
        { type: 'OBJECTIVE_COMPLETED', objective: 'contact-reporter', by: 'engine' },
        { type: 'EVIDENCE_UNLOCKED', evidence: 'witness', by: 'engine' },
      ],
    });
  });

  it('completes an objective without a target on any action of its type, once', () => {
    const start = initialState(firstResponse);
    const decided = applyAction(firstResponse, start, { type: 'SUBMIT_DECISION', target: 'validate' });
    expect(decided.events).toEqual([{ type: 'OBJECTIVE_COMPLETED', objective: 'decide', by: 'engine' }]);
    expect(applyAction(firstResponse, decided.state, { type: 'SUBMIT_DECISION', target: 'invalidate' })).toEqual({ state: decided.state, events: [] });
  });

  it('ignores opening evidence that is not available (locked, or unknown)', () => {
    const start = initialState(banEvasion);
    expect(applyAction(banEvasion, start, { type: 'OPEN_EVIDENCE', target: 'ban-record' })).toEqual({ state: start, events: [] });
    expect(applyAction(banEvasion, start, { type: 'OPEN_EVIDENCE', target: 'nothing' })).toEqual({ state: start, events: [] });
    expect(applyAction(banEvasion, start, { type: 'OPEN_EVIDENCE' })).toEqual({ state: start, events: [] });
  });

  it('does not change the state it was given', () => {
    const start = initialState(firstResponse);
    const copy = structuredClone(start);
    applyAction(firstResponse, start, { type: 'OPEN_EVIDENCE', target: 'chat-log' });
    expect(start).toEqual(copy);
  });

  it('lets the trainer complete and reset objectives; unknown ids are undefined', () => {
    const start = initialState(firstResponse);
    const completed = completeObjective(firstResponse, start, 'contact-reporter')!;
    expect(completed.events).toEqual([
      { type: 'OBJECTIVE_COMPLETED', objective: 'contact-reporter', by: 'trainer' },
      { type: 'EVIDENCE_UNLOCKED', evidence: 'witness', by: 'engine' },
    ]);
    expect(completeObjective(firstResponse, completed.state, 'contact-reporter')).toEqual({ state: completed.state, events: [] });
    const reset = resetObjective(firstResponse, completed.state, 'contact-reporter')!;
    expect(reset).toEqual({
      state: { completed_objectives: [], available_evidence: ['chat-log', 'witness'] },
      events: [{ type: 'OBJECTIVE_RESET', objective: 'contact-reporter', by: 'trainer' }],
    });
    expect(completeObjective(firstResponse, start, 'nope')).toBeUndefined();
    expect(resetObjective(firstResponse, start, 'nope')).toBeUndefined();
  });

  it('lets the trainer release and lock evidence; unknown keys are undefined', () => {
    const start = initialState(banEvasion);
    const released = setEvidence(banEvasion, start, 'ban-record', true)!;
    expect(released).toEqual({
      state: { completed_objectives: [], available_evidence: ['join-log', 'ban-record'] },
      events: [{ type: 'EVIDENCE_UNLOCKED', evidence: 'ban-record', by: 'trainer' }],
    });
    // Released evidence can now be opened; locking it again takes it away.
    expect(setEvidence(banEvasion, released.state, 'ban-record', true)).toEqual({ state: released.state, events: [] });
    expect(setEvidence(banEvasion, released.state, 'join-log', false)).toEqual({
      state: { completed_objectives: [], available_evidence: ['ban-record'] },
      events: [{ type: 'EVIDENCE_LOCKED', evidence: 'join-log', by: 'trainer' }],
    });
    expect(setEvidence(banEvasion, start, 'nope', true)).toBeUndefined();
  });
});
