// A training classroom for tests: the demo scenarios, a trainer, an onboarding trainee, a
// broadcaster that records what it is given, and helpers for the session routes.
import type { EnvironmentName } from '../../src/config.js';
import { DEMO_SCENARIOS } from '../../src/demo/seed-scenarios.js';
import type { Db } from '../../src/platform/db/types.js';
import type { BroadcastMessage, Broadcaster } from '../../src/training/broadcaster.js';
import { upsertScenarios } from '../../src/training/scenario-queries.js';
import type { TestApp } from './app.js';
import { signedIn, type Person } from './identity.js';

export class RecordingBroadcaster implements Broadcaster {
  sent: { environment: EnvironmentName; message: BroadcastMessage }[] = [];
  failWith: Error | undefined;

  async send(environment: EnvironmentName, messages: readonly BroadcastMessage[]): Promise<void> {
    if (this.failWith) throw this.failWith;
    for (const message of messages) this.sent.push({ environment, message });
  }

  /** What went out since the last call, as `topic event` lines. */
  take(): string[] {
    const lines = this.sent.map(({ message }) => `${message.topic} ${message.event}`);
    this.sent = [];
    return lines;
  }
}

export async function importDemoScenarios(db: Db): Promise<Record<string, number>> {
  await db.transaction((tx) => upsertScenarios(tx, DEMO_SCENARIOS));
  const { rows } = await db.query<{ slug: string; id: number }>('select slug, id from training_scenarios');
  return Object.fromEntries(rows.map((r) => [r.slug, r.id]));
}

export const newTrainer = (t: TestApp, name = 'Jordan Pike') => signedIn(t, { rank: 'Agent', is_trainer: true, name });
export const newTrainee = (t: TestApp, name = 'Casey Newman') => signedIn(t, { rank: 'Agent', status: 'onboarding', clearance: 1, name });

export const post = (t: TestApp, url: string, person: Person, body?: unknown) =>
  t.app.inject({ method: 'POST', url, headers: person.headers, ...(body === undefined ? {} : { payload: body as object }) });
export const get = (t: TestApp, url: string, person: Person) => t.app.inject({ method: 'GET', url, headers: person.headers });

/** A created session's id; the first scenario given by slug. */
export async function createSession(t: TestApp, trainer: Person, trainee: Person, scenarioId?: number): Promise<number> {
  const res = await post(t, '/training/sessions', trainer, { trainee_id: trainee.agent.chat_id, ...(scenarioId !== undefined ? { scenario_id: scenarioId } : {}) });
  if (res.statusCode !== 201) throw new Error(`session not created: ${res.statusCode} ${res.body}`);
  return res.json().session.id as number;
}

export async function sessionRow(db: Db, id: number) {
  const { rows } = await db.query<{ status: string; run: number; elapsed_ms: number; running_since: string | null; score: number | null }>(
    'select status, run, elapsed_ms, running_since, score from training_sessions where id = $1::bigint',
    [id],
  );
  return rows[0];
}

/** The session's events, oldest first, as `TYPE` strings. */
export async function sessionEventTypes(db: Db, id: number): Promise<string[]> {
  const { rows } = await db.query<{ type: string }>('select type from events where training_session_id = $1::bigint order by id', [id]);
  return rows.map((r) => r.type);
}

export async function instanceStates(db: Db, id: number) {
  const { rows } = await db.query<{ slug: string; status: string; state: { completed_objectives: string[]; available_evidence: string[] } }>(
    `select sc.slug, i.status, i.state from training_session_scenarios i join training_scenarios sc on sc.id = i.scenario_id
     where i.session_id = $1::bigint order by i.position`,
    [id],
  );
  return rows;
}
