// The training sessions' SQL (issue 11): a session with its members and clock, its scenario
// instances, events, notes and injections. Writes take the caller's transaction; a session is
// locked (`lockSession`) before anything of it changes, so its controls and actions queue.
import type { Queryable, Tx } from '../platform/db/types.js';
import { EVENT_COLUMNS, type EventRecord } from '../platform/events.js';
import type { ScenarioDefinition } from './scenario-file.js';
import type { ScenarioState } from './engine.js';
import type { INJECTION_TYPES, SessionStatus } from './session-schemas.js';

export interface SessionRow {
  id: number;
  status: SessionStatus;
  run: number;
  elapsed_ms: number;
  running_since: string | null;
  started_at: string | null;
  ended_at: string | null;
  score: number | null;
  result: 'pass' | 'fail' | null;
  comments: string | null;
  released_feedback: string | null;
  evaluated_at: string | null;
  evaluated_by: string | null;
  trainer_id: string;
  trainer_name: string | null;
  trainee_id: string;
  trainee_name: string | null;
  created_at: string;
  updated_at: string;
}

export interface InstanceRow {
  id: number;
  session_id: number;
  scenario_id: number;
  slug: string;
  title: string;
  position: number;
  status: 'waiting' | 'active' | 'completed';
  definition: ScenarioDefinition;
  state: ScenarioState;
  activated_at: string | null;
  completed_at: string | null;
}

export interface NoteRow {
  id: number;
  author_chat_id: string;
  author_role: 'trainer' | 'trainee';
  body: string;
  released: boolean;
  released_at: string | null;
  created_at: string;
}

export interface InjectionRow {
  id: number;
  type: (typeof INJECTION_TYPES)[number];
  title: string | null;
  content: string;
  created_by: string;
  created_at: string;
}

// The clock is read as of the statement (the transaction's now() under a lock): time active so far.
const SESSION_COLUMNS = `s.id, s.status, s.run,
  (s.elapsed_ms + coalesce((extract(epoch from (now() - s.running_since)) * 1000)::bigint, 0))::bigint as elapsed_ms,
  s.running_since, s.started_at, s.ended_at, s.score, s.result, s.comments, s.released_feedback, s.evaluated_at, s.evaluated_by,
  tr.chat_id as trainer_id, tra.name as trainer_name, te.chat_id as trainee_id, tea.name as trainee_name, s.created_at, s.updated_at`;

const SESSION_JOINS = `join training_session_members tr on tr.session_id = s.id and tr.role = 'trainer'
  join agents tra on tra.chat_id = tr.chat_id
  join training_session_members te on te.session_id = s.id and te.role = 'trainee'
  join agents tea on tea.chat_id = te.chat_id`;

export async function findSession(db: Queryable, id: number): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(`select ${SESSION_COLUMNS} from training_sessions s ${SESSION_JOINS} where s.id = $1::bigint`, [id], {
    name: 'find_training_session',
  });
  return rows[0];
}

/**
 * Locks the session row for the rest of the transaction. The lock is taken alone and the row read
 * after it, so the read sees whatever a control that held the lock before us committed.
 */
export async function lockSession(tx: Tx, id: number): Promise<SessionRow | undefined> {
  const locked = await tx.query('select 1 from training_sessions where id = $1::bigint for update', [id], { name: 'lock_training_session' });
  return locked.rowCount === 0 ? undefined : findSession(tx, id);
}

/** Sessions an agent trained, and those they are the trainee of in a visible status; newest first. */
export async function listSessions(db: Queryable, chatId: string, limit: number) {
  const { rows } = await db.query<SessionRow & { scenario_titles: string[]; active_scenario_title: string | null }>(
    `select ${SESSION_COLUMNS},
       coalesce((select array_agg(sc.title order by i.position) from training_session_scenarios i join training_scenarios sc on sc.id = i.scenario_id where i.session_id = s.id), '{}') as scenario_titles,
       (select sc.title from training_session_scenarios i join training_scenarios sc on sc.id = i.scenario_id where i.session_id = s.id and i.status = 'active') as active_scenario_title
     from training_session_members me
     join training_sessions s on s.id = me.session_id
     ${SESSION_JOINS}
     where me.chat_id = $1::text and (me.role = 'trainer' or s.status in ('active', 'paused', 'completed'))
     order by s.id desc
     limit $2::int`,
    [chatId, limit],
  );
  return rows;
}

const INSTANCE_COLUMNS = `i.id, i.session_id, i.scenario_id, sc.slug, sc.title, i.position, i.status, i.definition, i.state, i.activated_at, i.completed_at`;

export async function listInstances(db: Queryable, sessionId: number): Promise<InstanceRow[]> {
  const { rows } = await db.query<InstanceRow>(
    `select ${INSTANCE_COLUMNS} from training_session_scenarios i join training_scenarios sc on sc.id = i.scenario_id
     where i.session_id = $1::bigint order by i.position`,
    [sessionId],
    { name: 'list_training_instances' },
  );
  return rows;
}

export async function findInstance(db: Queryable, sessionId: number, instanceId: number): Promise<InstanceRow | undefined> {
  const { rows } = await db.query<InstanceRow>(
    `select ${INSTANCE_COLUMNS} from training_session_scenarios i join training_scenarios sc on sc.id = i.scenario_id
     where i.session_id = $1::bigint and i.id = $2::bigint`,
    [sessionId, instanceId],
  );
  return rows[0];
}

export async function findActiveInstance(db: Queryable, sessionId: number): Promise<InstanceRow | undefined> {
  const { rows } = await db.query<InstanceRow>(
    `select ${INSTANCE_COLUMNS} from training_session_scenarios i join training_scenarios sc on sc.id = i.scenario_id
     where i.session_id = $1::bigint and i.status = 'active'`,
    [sessionId],
    { name: 'find_active_training_instance' },
  );
  return rows[0];
}

/** A scenario joins the session with its catalog definition as of now and a fresh run state. */
export async function insertInstance(tx: Tx, sessionId: number, scenarioId: number, status: 'waiting' | 'active', state: (d: ScenarioDefinition) => ScenarioState): Promise<InstanceRow> {
  const { rows } = await tx.query<{ definition: ScenarioDefinition }>('select definition from training_scenarios where id = $1::bigint', [scenarioId]);
  const definition = rows[0]!.definition;
  const inserted = await tx.query<{ id: number }>(
    `insert into training_session_scenarios (session_id, scenario_id, position, status, definition, state, activated_at)
     values ($1::bigint, $2::bigint,
             (select coalesce(max(position), 0) + 1 from training_session_scenarios where session_id = $1::bigint),
             $3::text, $4::jsonb, $5::jsonb, case when $3::text = 'active' then now() end)
     returning id`,
    [sessionId, scenarioId, status, JSON.stringify(definition), JSON.stringify(state(definition))],
  );
  return (await findInstance(tx, sessionId, inserted.rows[0]!.id))!;
}

export async function saveInstanceState(tx: Tx, instanceId: number, state: ScenarioState): Promise<void> {
  await tx.query('update training_session_scenarios set state = $2::jsonb, updated_at = now() where id = $1::bigint', [instanceId, JSON.stringify(state)], {
    name: 'save_training_instance_state',
  });
}

export async function touchSession(tx: Tx, sessionId: number): Promise<void> {
  await tx.query('update training_sessions set updated_at = now() where id = $1::bigint', [sessionId], { name: 'touch_training_session' });
}

/** The latest events of a session, oldest first; a trainee does not see that a private note was written. */
export async function listSessionEvents(db: Queryable, sessionId: number, forTrainer: boolean, limit: number): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `select * from (
       select ${EVENT_COLUMNS} from events
       where training_session_id = $1::bigint and ($2::boolean or type <> 'TRAINER_NOTE_ADDED')
       order by id desc limit $3::int
     ) latest order by id`,
    [sessionId, forTrainer, limit],
    { name: 'list_training_events' },
  );
  return rows;
}

export async function findActionByClientId(tx: Tx, sessionId: number, clientId: string): Promise<EventRecord | undefined> {
  const { rows } = await tx.query<EventRecord>(`select ${EVENT_COLUMNS} from events where training_session_id = $1::bigint and client_id = $2::text`, [sessionId, clientId], {
    name: 'find_training_action',
  });
  return rows[0];
}

const NOTE_COLUMNS = 'id, author_chat_id, author_role, body, released, released_at, created_at';

/** Trainers read every note; trainees the released ones (their own start released). */
export async function listNotes(db: Queryable, sessionId: number, forTrainer: boolean): Promise<NoteRow[]> {
  const { rows } = await db.query<NoteRow>(
    `select ${NOTE_COLUMNS} from training_notes where session_id = $1::bigint and ($2::boolean or released) order by id`,
    [sessionId, forTrainer],
    { name: 'list_training_notes' },
  );
  return rows;
}

export async function insertNote(tx: Tx, sessionId: number, author: string, role: 'trainer' | 'trainee', body: string): Promise<NoteRow> {
  const released = role === 'trainee';
  const { rows } = await tx.query<NoteRow>(
    `insert into training_notes (session_id, author_chat_id, author_role, body, released, released_at)
     values ($1::bigint, $2::text, $3::text, $4::text, $5::boolean, case when $5::boolean then now() end)
     returning ${NOTE_COLUMNS}`,
    [sessionId, author, role, body, released],
  );
  return rows[0]!;
}

/** Releases a note of the session; undefined when the session has no such note. Releasing twice keeps the first time. */
export async function releaseNote(tx: Tx, sessionId: number, noteId: number): Promise<NoteRow | undefined> {
  const { rows } = await tx.query<NoteRow>(
    `update training_notes set released = true, released_at = coalesce(released_at, now())
     where session_id = $1::bigint and id = $2::bigint returning ${NOTE_COLUMNS}`,
    [sessionId, noteId],
  );
  return rows[0];
}

const INJECTION_COLUMNS = 'id, type, title, content, created_by, created_at';

export async function listInjections(db: Queryable, sessionId: number): Promise<InjectionRow[]> {
  const { rows } = await db.query<InjectionRow>(`select ${INJECTION_COLUMNS} from training_injections where session_id = $1::bigint order by id`, [sessionId], {
    name: 'list_training_injections',
  });
  return rows;
}

export async function insertInjection(tx: Tx, sessionId: number, input: { type: InjectionRow['type']; title?: string | undefined; content: string; createdBy: string }): Promise<InjectionRow> {
  const { rows } = await tx.query<InjectionRow>(
    `insert into training_injections (session_id, type, title, content, created_by)
     values ($1::bigint, $2::text, $3::text, $4::text, $5::text) returning ${INJECTION_COLUMNS}`,
    [sessionId, input.type, input.title ?? null, input.content, input.createdBy],
  );
  return rows[0]!;
}
