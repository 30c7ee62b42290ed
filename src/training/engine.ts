// The scenario engine (issue 11; DESIGN.md "Training scenarios"): a pure function over a scenario's
// definition, the state of its run and one trainee action. It completes every objective whose
// `complete_when` the action matches and then unlocks every locked evidence item whose
// `unlock_when` objective is now complete, and names what it did as engine events. No clock, no
// database: the caller persists the new state and the events in the transaction that recorded the
// action, so the same inputs always give the same run.
import { TRAINEE_ACTIONS, type ScenarioDefinition } from './scenario-file.js';

export type TraineeActionType = (typeof TRAINEE_ACTIONS)[number];

export interface TraineeAction {
  type: TraineeActionType;
  /** An evidence key for OPEN_EVIDENCE; otherwise what the action names (a party, a decision). */
  target?: string | undefined;
}

/** A run's progress, stored with the scenario instance. Lists keep the order things happened in. */
export interface ScenarioState {
  completed_objectives: string[];
  /** Evidence the trainee may open: unlocked from the start, by the engine, or released by the trainer. */
  available_evidence: string[];
}

export type EngineEvent =
  | { type: 'OBJECTIVE_COMPLETED'; objective: string; by: 'engine' | 'trainer' }
  | { type: 'OBJECTIVE_RESET'; objective: string; by: 'trainer' }
  | { type: 'EVIDENCE_UNLOCKED'; evidence: string; by: 'engine' | 'trainer' }
  | { type: 'EVIDENCE_LOCKED'; evidence: string; by: 'trainer' };

export interface EngineStep {
  state: ScenarioState;
  events: EngineEvent[];
}

/** A fresh run: nothing completed, only the evidence that is not locked available. */
export function initialState(definition: ScenarioDefinition): ScenarioState {
  return { completed_objectives: [], available_evidence: definition.evidence.filter((e) => !e.locked).map((e) => e.key) };
}

/** Unlocks every locked item whose objective is complete and that is not available yet. */
function unlockReached(definition: ScenarioDefinition, state: ScenarioState, events: EngineEvent[]): ScenarioState {
  const available = [...state.available_evidence];
  for (const item of definition.evidence) {
    const objective = item.unlock_when?.objective;
    if (!item.locked || objective === undefined || available.includes(item.key)) continue;
    if (!state.completed_objectives.includes(objective)) continue;
    available.push(item.key);
    events.push({ type: 'EVIDENCE_UNLOCKED', evidence: item.key, by: 'engine' });
  }
  return { ...state, available_evidence: available };
}

/** One trainee action through the rules. Opening evidence that is not available completes nothing. */
export function applyAction(definition: ScenarioDefinition, state: ScenarioState, action: TraineeAction): EngineStep {
  const events: EngineEvent[] = [];
  if (action.type === 'OPEN_EVIDENCE' && (action.target === undefined || !state.available_evidence.includes(action.target))) {
    return { state, events };
  }
  const completed = [...state.completed_objectives];
  for (const objective of definition.objectives) {
    const when = objective.complete_when;
    if (when === undefined || completed.includes(objective.id) || when.type !== action.type) continue;
    if (when.target !== undefined && when.target !== action.target) continue;
    completed.push(objective.id);
    events.push({ type: 'OBJECTIVE_COMPLETED', objective: objective.id, by: 'engine' });
  }
  return { state: unlockReached(definition, { ...state, completed_objectives: completed }, events), events };
}

/** Trainer override: an objective complete (and what that unlocks); undefined for an unknown id. */
export function completeObjective(definition: ScenarioDefinition, state: ScenarioState, objective: string): EngineStep | undefined {
  if (!definition.objectives.some((o) => o.id === objective)) return undefined;
  if (state.completed_objectives.includes(objective)) return { state, events: [] };
  const events: EngineEvent[] = [{ type: 'OBJECTIVE_COMPLETED', objective, by: 'trainer' }];
  return { state: unlockReached(definition, { ...state, completed_objectives: [...state.completed_objectives, objective] }, events), events };
}

/** Trainer override: an objective back to open; evidence it unlocked stays available (the trainee has seen it). */
export function resetObjective(definition: ScenarioDefinition, state: ScenarioState, objective: string): EngineStep | undefined {
  if (!definition.objectives.some((o) => o.id === objective)) return undefined;
  if (!state.completed_objectives.includes(objective)) return { state, events: [] };
  return {
    state: { ...state, completed_objectives: state.completed_objectives.filter((id) => id !== objective) },
    events: [{ type: 'OBJECTIVE_RESET', objective, by: 'trainer' }],
  };
}

/** Trainer override: evidence released to the trainee, or locked away again; undefined for an unknown key. */
export function setEvidence(definition: ScenarioDefinition, state: ScenarioState, key: string, available: boolean): EngineStep | undefined {
  if (!definition.evidence.some((e) => e.key === key)) return undefined;
  if (state.available_evidence.includes(key) === available) return { state, events: [] };
  return available
    ? { state: { ...state, available_evidence: [...state.available_evidence, key] }, events: [{ type: 'EVIDENCE_UNLOCKED', evidence: key, by: 'trainer' }] }
    : { state: { ...state, available_evidence: state.available_evidence.filter((k) => k !== key) }, events: [{ type: 'EVIDENCE_LOCKED', evidence: key, by: 'trainer' }] };
}
