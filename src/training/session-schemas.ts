// Request and response schemas of the training sessions (spec: Training center; issue 11).
import { Type, type Static } from 'typebox';
import { nullableObject, nullableString, nullableTimestamp, stringEnum, timestamp } from '../platform/http/schemas.js';
import { TRAINEE_ACTIONS } from './scenario-file.js';

export const SESSION_STATUSES = ['pending', 'active', 'paused', 'completed', 'aborted'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const INJECTION_TYPES = ['supplemental_report', 'witness_statement', 'admin_information', 'custom_message', 'simulated_evidence'] as const;

const Id = (description: string) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });
const ChatId = Type.String({ pattern: '^[0-9]{1,20}$', description: 'A chat platform user id' });
const Key = Type.String({ minLength: 1, maxLength: 64, description: 'An evidence key of the active scenario' });

export const SessionParams = Type.Object({ session_id: Id('The training session') });
export const ActivateParams = Type.Object({ session_id: Id('The training session'), scenario_id: Id('A scenario of the catalog') });
export const EvidenceParams = Type.Object({ session_id: Id('The training session'), key: Key });
export const ObjectiveParams = Type.Object({ session_id: Id('The training session'), id: Type.String({ minLength: 1, maxLength: 64, description: 'An objective id of the active scenario' }) });
export const NoteParams = Type.Object({ session_id: Id('The training session'), note_id: Id('A note of the session') });

export const CreateSessionBody = Type.Object(
  {
    trainee_id: ChatId,
    scenario_id: Type.Optional(Id('The first scenario: a waiting child that start activates')),
  },
  { additionalProperties: false },
);

/** A trainee action's payload is free-form, within a bound (serialized, at most this many characters). */
export const ACTION_PAYLOAD_MAX = 4000;

export const TraineeActionBody = Type.Object(
  {
    type: stringEnum(TRAINEE_ACTIONS, { description: 'A whitelisted trainee action' }),
    target: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'An evidence key for OPEN_EVIDENCE; otherwise what the action names' })),
    client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'The client’s id for this action: a repeat is recorded once' })),
    session_scenario_id: Type.Optional(Id('The scenario instance acted on; the active one by default')),
    payload: Type.Optional(Type.Object({}, { additionalProperties: true, description: `Free-form details, at most ${ACTION_PAYLOAD_MAX} characters as JSON` })),
  },
  { additionalProperties: false },
);
export type TraineeActionBody = Static<typeof TraineeActionBody>;

export const InjectBody = Type.Object(
  {
    type: stringEnum(INJECTION_TYPES),
    content: Type.String({ minLength: 1, maxLength: 2000 }),
    title: Type.Optional(Type.String({ maxLength: 120 })),
  },
  { additionalProperties: false },
);

export const NoteBody = Type.Object({ body: Type.String({ minLength: 1, maxLength: 1000 }) }, { additionalProperties: false });

export const EvaluateBody = Type.Object(
  {
    score: Type.Integer({ minimum: 0, maximum: 100 }),
    result: stringEnum(['pass', 'fail'] as const),
    comments: Type.Optional(Type.String({ maxLength: 2000, description: 'For the trainer: never shown to the trainee' })),
    released_feedback: Type.Optional(Type.String({ maxLength: 2000, description: 'Shown to the trainee' })),
  },
  { additionalProperties: false },
);
export type EvaluateBody = Static<typeof EvaluateBody>;

const Evaluation = Type.Object({
  score: Type.Integer(),
  result: stringEnum(['pass', 'fail'] as const),
  comments: Type.Optional(nullableString({ description: 'Trainer view only' })),
  released_feedback: nullableString(),
  evaluated_at: timestamp(),
  evaluated_by: nullableString(),
});

export const TrainingSession = Type.Object({
  id: Type.Integer(),
  status: stringEnum(SESSION_STATUSES),
  run: Type.Integer({ description: 'Starts at 1; each restart or reset begins the next run' }),
  elapsed_ms: Type.Integer({ description: 'Time active in this run, up to the moment of the answer' }),
  running_since: nullableTimestamp('Set while active'),
  started_at: nullableTimestamp(),
  ended_at: nullableTimestamp(),
  trainer_id: Type.String(),
  trainer_name: nullableString(),
  trainee_id: Type.String(),
  trainee_name: nullableString(),
  evaluation: nullableObject(Evaluation, 'Null until graded'),
  created_at: timestamp(),
  updated_at: timestamp(),
});

export const SessionListEntry = Type.Object({
  ...TrainingSession.properties,
  scenario_titles: Type.Array(Type.String(), { description: 'The session’s scenarios in order' }),
  active_scenario_title: nullableString(),
});

export const ScenarioInstance = Type.Object({
  id: Type.Integer(),
  scenario_id: Type.Integer(),
  slug: Type.String(),
  title: Type.String(),
  position: Type.Integer(),
  status: stringEnum(['waiting', 'active', 'completed'] as const),
  definition: Type.Unknown({ description: 'Trainers: the whole definition. Trainees: briefing, objective titles with completion, evidence titles and the content of available evidence' }),
  state: Type.Object({ completed_objectives: Type.Array(Type.String()), available_evidence: Type.Array(Type.String()) }),
  activated_at: nullableTimestamp(),
  completed_at: nullableTimestamp(),
});

export const TrainingEventSchema = Type.Object({
  id: Type.Integer(),
  type: Type.String(),
  actor_kind: stringEnum(['agent', 'bot', 'system'] as const),
  actor_chat_id: nullableString(),
  actor_name: nullableString(),
  data: Type.Unknown(),
  client_id: nullableString(),
  correlation_id: Type.String(),
  created_at: timestamp(),
});

export const Note = Type.Object({
  id: Type.Integer(),
  author_chat_id: Type.String(),
  author_role: stringEnum(['trainer', 'trainee'] as const),
  body: Type.String(),
  released: Type.Boolean(),
  released_at: nullableTimestamp(),
  created_at: timestamp(),
});

export const Injection = Type.Object({
  id: Type.Integer(),
  type: stringEnum(INJECTION_TYPES),
  title: nullableString(),
  content: Type.String(),
  created_by: Type.String(),
  created_at: timestamp(),
});

export const SessionPayload = Type.Object({
  success: Type.Literal(true),
  role: stringEnum(['trainer', 'trainee'] as const, { description: 'What the caller is in this session; the payload is filtered for it' }),
  session: TrainingSession,
  active_scenario: nullableObject(ScenarioInstance),
  scenarios: Type.Array(ScenarioInstance),
  events: Type.Array(TrainingEventSchema, { description: 'The latest 200 events of the session, oldest first' }),
  notes: Type.Array(Note),
  injections: Type.Array(Injection),
});

export const SessionList = Type.Object({ success: Type.Literal(true), sessions: Type.Array(SessionListEntry, { maxItems: 300 }) });
export const Done = Type.Object({ success: Type.Literal(true) });
export const ActivateResult = Type.Object({ success: Type.Literal(true), scenario: ScenarioInstance, event: TrainingEventSchema });
export const RecordResult = Type.Object({
  success: Type.Literal(true),
  recorded: TrainingEventSchema,
  duplicated: Type.Boolean(),
  engine_events: Type.Array(TrainingEventSchema, { description: 'What the engine completed and unlocked' }),
});
export const OverrideResult = Type.Object({
  success: Type.Literal(true),
  scenario: ScenarioInstance,
  event: TrainingEventSchema,
  engine_events: Type.Array(TrainingEventSchema, { description: 'What followed from the override (evidence unlocked by a completed objective)' }),
});
export const InjectResult = Type.Object({ success: Type.Literal(true), injection: Injection, event: TrainingEventSchema });
export const NoteResult = Type.Object({ success: Type.Literal(true), note: Note, event: TrainingEventSchema });
export const EvaluateResult = Type.Object({ success: Type.Literal(true), session: TrainingSession, event: TrainingEventSchema });
