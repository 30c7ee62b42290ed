// The classroom of the training scenarios (training-classroom, realtime-fanout): trainers and their
// onboarding trainees written straight into the database, each trainer with a live session (a
// cookie), and the demo scenarios; then each trainer opens a session for their trainee and starts
// it, over HTTP as the training front end does.
import { insertAgent } from '../../src/agents/queries.js';
import { DEMO_SCENARIOS } from '../../src/demo/seed-scenarios.js';
import { createSession, SESSION_COOKIE } from '../../src/platform/auth/sessions.js';
import type { Db } from '../../src/platform/db/types.js';
import { upsertScenarios } from '../../src/training/scenario-queries.js';
import { createFleetClient } from './bot-fleet.js';

/** A browser's fetch sends its page's origin on a POST; the service must list it (TRAINING_ORIGINS). */
export const ORIGIN = 'http://training.bench.localhost';

/** Snowflake-like chat ids, as text (they exceed 2^53): `prefix` then `i`, 18 digits. */
export const chatId = (prefix: string, i: number) => `${prefix.padEnd(13, '0')}${String(i).padStart(5, '0')}`;

export interface Seat {
  index: number;
  trainerId: string;
  traineeId: string;
  trainerCookie: string;
  scenarioId: number;
  /** Once the trainer has opened it. */
  sessionId: number;
}

export interface SeatPlan {
  /** Leading digits of the trainers' and the trainees' chat ids. */
  trainers: string;
  trainees: string;
  /** Seat i's trainer: a Senior Agent flagged as a trainer, or (false) a Supervisor, a trainer by rank. */
  flagged(i: number): boolean;
  /** Seat i's demo scenario. */
  slug(i: number): string;
}

/** `cms_session=…` of a fresh session of `chatId`. */
export const sessionCookie = async (db: Db, chatId: string): Promise<string> => `${SESSION_COOKIE}=${(await createSession(db, 'production', chatId)).token}`;

export async function seatClassroom(db: Db, count: number, plan: SeatPlan): Promise<Seat[]> {
  const scenarioIds = await db.transaction(async (tx) => {
    await upsertScenarios(tx, DEMO_SCENARIOS);
    const { rows } = await tx.query<{ id: number; slug: string }>('select id, slug from training_scenarios');
    return new Map(rows.map((r) => [r.slug, r.id]));
  });
  const seats: Seat[] = [];
  for (let i = 0; i < count; i++) {
    const [trainerId, traineeId, flagged] = [chatId(plan.trainers, i), chatId(plan.trainees, i), plan.flagged(i)];
    await insertAgent(db, { chat_id: trainerId, name: `Trainer ${i}`, status: 'active', agent_rank: flagged ? 'Senior Agent' : 'Supervisor', clearance_level: 3, is_trainer: flagged });
    await insertAgent(db, { chat_id: traineeId, name: `Trainee ${i}`, status: 'onboarding', agent_rank: 'Agent', clearance_level: 1, is_trainer: false });
    seats.push({ index: i, trainerId, traineeId, trainerCookie: await sessionCookie(db, trainerId), scenarioId: scenarioIds.get(plan.slug(i))!, sessionId: 0 });
  }
  return seats;
}

export type Browser = ReturnType<typeof trainingBrowser>;

/** Keep-alive HTTP as the training front end sends it: a session cookie, the page's origin, JSON bodies. */
export function trainingBrowser(sockets: number) {
  const client = createFleetClient(sockets);
  const request = (method: 'GET' | 'POST', url: string, cookie: string, body?: unknown) =>
    client.request(method, url, { cookie, origin: ORIGIN }, body === undefined ? undefined : JSON.stringify(body));
  /** A request that must succeed; its JSON answer. */
  const call = async <T>(method: 'GET' | 'POST', url: string, cookie: string, body?: unknown): Promise<T> => {
    const answer = await request(method, url, cookie, body);
    if (answer.status >= 300) throw new Error(`${method} ${new URL(url).pathname}: ${answer.status} ${answer.body}`);
    return JSON.parse(answer.body) as T;
  };
  return { request, call, close: client.close };
}

/** Each trainer opens a session for their trainee with the seat's scenario, on the instance at `urlOf(seat)`, and starts it. */
export async function openSessions(browser: Browser, seats: Seat[], urlOf: (seat: Seat) => string): Promise<void> {
  for (const seat of seats) {
    const url = `${urlOf(seat)}/training/sessions`;
    seat.sessionId = (await browser.call<{ session: { id: number } }>('POST', url, seat.trainerCookie, { trainee_id: seat.traineeId, scenario_id: seat.scenarioId })).session.id;
    await browser.call('POST', `${url}/${seat.sessionId}/start`, seat.trainerCookie, {});
  }
}
