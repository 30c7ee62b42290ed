// The world of issue 38's model-based confidentiality test: the principals, what the model knows
// of every report life it created (flag, parties, the texts written into it), and what must not
// reach those below supervisor rank at a given moment. Commands live in confidentiality-commands.ts.
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { RetentionScheduler } from '../../src/admin/retention/scheduler.js';
import { PRODUCTION_KEY, silentLog, type TestApp } from './app.js';
import { chatId, signedIn, type Person } from './identity.js';
import { newTrainee, newTrainer } from './training.js';

export type Who = 'key' | 'agent' | 'senior' | 'supervisor' | 'director' | 'trainer' | 'trainee';
/** Those the supervisor flag keeps reports from (spec Authentication 6). */
export const BELOW_SUPERVISOR: readonly Who[] = ['agent', 'senior', 'trainer', 'trainee'];
export const ALL: readonly Who[] = ['key', ...BELOW_SUPERVISOR, 'supervisor', 'director'];

/** One life of a report id (a deleted id may be created again: a new life, the old one's rows stay). */
export interface Life {
  id: string;
  reporter: string;
  reported: string;
  /** Its flag now; a deleted life keeps the flag it was deleted with. */
  flagged: boolean;
  live: boolean;
  /** Every canary written into it (its rows, events, queue payloads, punishments, deliveries). */
  texts: string[];
  /** Canaries a supervisor must find in `GET /reports/<id>` while it lives and nothing erased it. */
  shown: string[];
  /** Retention or a subject erasure touched it: its texts may be gone. */
  erased: boolean;
}

export interface Sent {
  who: Who;
  method: string;
  url: string;
  payload?: unknown;
  res: LightMyRequestResponse;
}

export class World {
  readonly lives: Life[] = [];
  /** The answers of the current step (checked, then cleared). */
  step: Sent[] = [];
  /** Chat ids each principal named itself (a lookup, a punishment): its own knowledge. */
  readonly named = new Map<Who, Set<string>>(ALL.map((w) => [w, new Set<string>()]));
  private n = 0;
  /** Where this run's lives start: a run picks among its own, so a seed and path replay it. */
  private runStart = 0;

  private constructor(
    readonly t: TestApp,
    readonly people: Record<Exclude<Who, 'key'>, Person>,
    readonly retention: RetentionScheduler,
    readonly sessionId: string,
  ) {}

  static async open(t: TestApp, sessionId: (trainer: Person, trainee: Person) => Promise<number>): Promise<World> {
    const trainer = await newTrainer(t);
    const trainee = await newTrainee(t);
    const people = {
      agent: await signedIn(t, { rank: 'Agent', clearance: 2, name: 'Alex Agent' }),
      senior: await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true, name: 'Sam Senior' }),
      supervisor: await signedIn(t, { rank: 'Supervisor', clearance: 4, allowlisted: true, name: 'Sue Supervisor' }),
      director: await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true, name: 'Dana Director' }),
      trainer,
      trainee,
    };
    const retention = new RetentionScheduler({ days: 30, production: () => t.environments.get('production'), log: silentLog });
    return new World(t, people, retention, String(await sessionId(trainer, trainee)));
  }

  headers(who: Who): Record<string, string> {
    return who === 'key' ? { authorization: PRODUCTION_KEY, host: 'localhost' } : this.people[who].headers;
  }

  chatIdOf(who: Exclude<Who, 'key'>): string {
    return this.people[who].agent.chat_id;
  }

  /** A unique canary: letters, digits and `-` only, so no escaping changes it. */
  canary(kind: string): string {
    return `CANARY-${++this.n}-${kind}-${randomBytes(4).toString('hex')}`;
  }

  nextReportId(): string {
    return `MB-${process.pid}-${++this.n}`;
  }

  newLife(id: string, flagged: boolean): Life {
    const life: Life = { id, reporter: chatId(), reported: chatId(), flagged, live: true, texts: [], shown: [], erased: false };
    this.lives.push(life);
    return life;
  }

  beginRun(): void {
    this.runStart = this.lives.length;
  }

  /** This run's lives. */
  runLives(): Life[] {
    return this.lives.slice(this.runStart);
  }

  /** This run's report ids (queue rows, punishments and deliveries are picked among theirs). */
  runReportIds(): string[] {
    return [...new Set(this.runLives().map((l) => l.id))];
  }

  /** The live life of a report id, if any. */
  live(id: string): Life | undefined {
    return this.lives.find((l) => l.id === id && l.live);
  }

  async send(who: Who, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object): Promise<LightMyRequestResponse> {
    const res = await this.t.app.inject({ method, url, headers: this.headers(who), ...(payload === undefined ? {} : { payload }) });
    if (res.statusCode >= 500 && res.statusCode !== 503) throw new Error(`${who} ${method} ${url} → ${res.statusCode} ${res.body}`);
    this.step.push({ who, method, url, payload, res });
    return res;
  }

  /** Ids the crawl fills path parameters with, read from the store (the model does not predict them). */
  async ids(sql: string, values: unknown[] = []): Promise<string[]> {
    return (await this.t.db.production.query<{ v: string }>(sql, values)).rows.map((r) => String(r.v));
  }

  /** What must reach no one below supervisor rank now: the texts and parties of every flagged life. */
  forbidden(): { text: string; life: Life; kind: 'canary' | 'party' }[] {
    return this.lives
      .filter((l) => l.flagged)
      .flatMap((l) => [
        ...l.texts.map((text) => ({ text, life: l, kind: 'canary' as const })),
        ...[l.reporter, l.reported].map((text) => ({ text, life: l, kind: 'party' as const })),
      ]);
  }
}

/**
 * The forbidden strings an answer to `who` carries, leaving out what the request itself carried
 * (its URL and body: repeating the caller's own words discloses nothing) and chat ids the caller
 * named in a request of its own (a lookup or punishment it asked for is its own record).
 */
export function leaksIn(world: World, who: Who, sent: { url: string; payload?: unknown; res: LightMyRequestResponse }): string[] {
  const text = `${sent.res.body}\n${JSON.stringify(sent.res.headers)}`.toLowerCase();
  const asked = `${decodeURIComponent(sent.url)}\n${JSON.stringify(sent.payload ?? null)}`.toLowerCase();
  const named = world.named.get(who)!;
  return world
    .forbidden()
    .filter(({ text: needle, kind }) => text.includes(needle.toLowerCase()) && !asked.includes(needle.toLowerCase()) && !(kind === 'party' && named.has(needle)))
    .map(({ text: needle, life, kind }) => `${kind} ${needle} of flagged ${life.id}${life.live ? '' : ' (deleted)'}`);
}
