// Requests racing on one training session (PostgreSQL only: PGlite runs one statement at a time).
// A third connection holds the session's row lock until both requests are queued behind it, so the
// race is certain rather than likely; two app instances on one database, as behind a load balancer.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../src/platform/db/types.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { TRANSITIONS } from '../src/training/session-controls.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import type { Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';
import { createSession, importDemoScenarios, newTrainee, newTrainer, sessionEventTypes, sessionRow } from './helpers/training.js';

/** Runs `fire` while the session row is locked elsewhere; lets go once `waiters` requests wait on it. */
async function afterQueueing<T>(db: Db, sessionId: number, waiters: number, fire: () => Promise<T>): Promise<T> {
  let release!: () => void;
  let locked!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = db.transaction(async (tx) => {
    await tx.query('select 1 from training_sessions where id = $1::bigint for update', [sessionId]);
    locked();
    await gate;
  });
  await isLocked;
  const answers = fire();
  await vi.waitFor(
    async () => {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
      expect(rows[0]!.n).toBe(waiters);
    },
    { timeout: 5000, interval: 20 },
  );
  release();
  await holder;
  return answers;
}

describe.runIf(onPostgres)('training session races (PostgreSQL)', () => {
  let t: TestApp;
  let other: TestApp;
  let trainer: Person;
  let scenarios: Record<string, number>;
  beforeAll(async () => {
    t = await createTestApp();
    other = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: t.urls.production! }) } });
    scenarios = await importDemoScenarios(t.db.production);
    trainer = await newTrainer(t);
  });
  afterAll(async () => {
    await other.close();
    await t.close();
  });

  const control = (app: TestApp, id: number, name: string) => app.app.inject({ method: 'POST', url: `/training/sessions/${id}/${name}`, headers: trainer.headers });

  it.each([
    ['start', 'start', 'pending'],
    ['pause', 'pause', 'active'],
    ['end', 'abort', 'active'],
  ] as const)('%s racing %s on two instances: one wins, the other gets 409, one event', async (first, second, from) => {
    const id = await createSession(t, trainer, await newTrainee(t), scenarios['first-response']);
    if (from === 'active') expect((await control(t, id, 'start')).statusCode).toBe(200);
    const before = await sessionEventTypes(t.db.production, id);
    const answers = await afterQueueing(t.db.production, id, 2, () => Promise.all([control(t, id, first), control(other, id, second)]));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(answers.find((r) => r.statusCode === 409)!.json().code).toBe('INVALID_SESSION_STATE');
    const winner = TRANSITIONS[answers[0]!.statusCode === 200 ? first : second];
    expect((await sessionRow(t.db.production, id))!.status).toBe(winner.to);
    const added = (await sessionEventTypes(t.db.production, id)).slice(before.length);
    expect(added.filter((e) => e.startsWith('SESSION_'))).toEqual([winner.event]);
  });

  it('two identical actions with one client_id at once: one recorded, the other answered as its duplicate', async () => {
    const trainee = await newTrainee(t);
    const id = await createSession(t, trainer, trainee, scenarios['first-response']);
    await control(t, id, 'start');
    const action = (app: TestApp) =>
      app.app.inject({ method: 'POST', url: `/training/sessions/${id}/events`, headers: trainee.headers, payload: { type: 'OPEN_EVIDENCE', target: 'chat-log', client_id: 'tap-1' } });
    const answers = await afterQueueing(t.db.production, id, 2, () => Promise.all([action(t), action(other)]));
    expect(answers.map((r) => [r.statusCode, r.json().duplicated]).sort()).toEqual([
      [200, true],
      [201, false],
    ]);
    const [a, b] = answers.map((r) => r.json().recorded.id);
    expect(a).toBe(b);
    expect((await sessionEventTypes(t.db.production, id)).filter((e) => e === 'OPEN_EVIDENCE' || e === 'OBJECTIVE_COMPLETED')).toEqual(['OPEN_EVIDENCE', 'OBJECTIVE_COMPLETED']);
  });
});
