// The failover test's pair of clusters (scripts/failover-clusters.sh: cms_failover_a on 5451,
// cms_failover_b on 5452, roles that swap), and a recorder of every answer a write load gets.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import pg from 'pg';
import { insertAgent } from '../../src/agents/queries.js';
import { createSession, SESSION_COOKIE } from '../../src/platform/auth/sessions.js';
import type { Db } from '../../src/platform/db/types.js';
import { chatId } from './identity.js';

export const CLUSTERS = ['cms_failover_a', 'cms_failover_b'] as const;
export const PORTS = [Number(process.env.FAILOVER_A_PORT ?? 5451), Number(process.env.FAILOVER_B_PORT ?? 5452)] as const;
/** The port of cluster 0 or 1. */
export const port = (index: number): number => PORTS[index === 0 ? 0 : 1];
const SCRIPT = join(import.meta.dirname, '../../scripts/failover-clusters.sh');
const run = promisify(execFile);

export const urlAt = (port: number, database = 'postgres') => `postgres://root@127.0.0.1:${port}/${database}`;
/** The service's URL: both hosts, the writable one chosen (libpq's form). */
export const multiHostUrl = (database: string) => `postgres://root@127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]}/${database}?target_session_attrs=read-write`;

export async function sql<R extends pg.QueryResultRow = Record<string, any>>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Which of the two is the primary now (0 or 1), or undefined when no primary answers. Of two
 * primaries (a promoted standby beside an old primary still up), the later timeline's, as
 * scripts/failover-clusters.sh chooses: the old one's commits wait for a standby it lost.
 */
export async function primaryIndex(): Promise<number | undefined> {
  let best: { index: number; timeline: number } | undefined;
  for (const index of [0, 1]) {
    try {
      const [row] = await sql(urlAt(port(index)), 'select pg_is_in_recovery() as recovery, (select timeline_id from pg_control_checkpoint()) as timeline');
      if (row?.recovery === false && (best === undefined || row.timeline > best.timeline)) best = { index, timeline: row.timeline };
    } catch {
      // not answering
    }
  }
  return best?.index;
}

/**
 * The pair is there: a server of it answers on one of its ports, primary or standby (repairPair,
 * under the pair's lock, makes it whole). Not "a primary answers": a test file collected while
 * another is half-way through a failover (the primary stopped, the standby not promoted yet) would
 * find none and skip, or with FAILOVER_TESTS_REQUIRED=1 fail (CI on bff466a).
 */
export async function pairAnswers(): Promise<boolean> {
  for (const index of [0, 1]) {
    try {
      await sql(urlAt(port(index)), 'select 1');
      return true;
    } catch {
      // not answering
    }
  }
  return false;
}

const version = () => readdirSync('/etc/postgresql').sort((a, b) => Number(a) - Number(b)).at(-1)!;

export async function ctl(index: number, ...args: string[]): Promise<void> {
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version(), CLUSTERS[index]!, ...args]);
}

const PAIR_LOCK = join(tmpdir(), 'cms-failover-pair.lock');

/**
 * The pair for one test file at a time: the slow step runs two files at once, and two files
 * failing over and repairing the same clusters together break each other. Waits for the lock (a
 * lock file naming its process; one whose process is gone is taken over); returns its release.
 */
export async function lockPair(): Promise<() => void> {
  for (;;) {
    try {
      const fd = openSync(PAIR_LOCK, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(PAIR_LOCK, { force: true });
    } catch {
      const holder = Number(readFileSync(PAIR_LOCK, { encoding: 'utf8', flag: 'a+' }) || 0);
      let alive = holder > 0;
      try {
        if (alive) process.kill(holder, 0);
      } catch {
        alive = false;
      }
      if (!alive) rmSync(PAIR_LOCK, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * Whether this test file may use the pair: PostgreSQL and a primary answering (with
 * FAILOVER_TESTS_REQUIRED=1, CI, a missing pair fails instead), and, when it may, the pair is this
 * file's alone from its first test to its last (lockPair). Call at the top of the file.
 */
export async function usePair(onPostgres: boolean): Promise<boolean> {
  const available = onPostgres && (await pairAnswers());
  if (onPostgres && !available && process.env.FAILOVER_TESTS_REQUIRED === '1') {
    throw new Error(`FAILOVER_TESTS_REQUIRED=1 but no server of the failover pair answers on ports ${PORTS.join(' and ')}: run scripts/failover-clusters.sh`);
  }
  let release: (() => void) | undefined;
  beforeAll(async () => {
    if (available) release = await lockPair();
  }, 900_000);
  afterAll(() => release?.());
  return available;
}

/** Makes the pair whole again: the primary kept, the other its synchronous standby (a new base backup if need be). */
export async function repairPair(): Promise<string> {
  return (await run(SCRIPT, [], { timeout: 120_000 })).stdout;
}

/** `default_transaction_read_only` on the server, for every session, at once (ALTER SYSTEM and a reload). */
export async function setReadOnly(port: number, on: boolean): Promise<void> {
  await sql(urlAt(port), on ? 'alter system set default_transaction_read_only = on' : 'alter system reset default_transaction_read_only');
  await sql(urlAt(port), 'select pg_reload_conf()');
}

export interface Answer {
  kind: 'create' | 'claim' | 'complete' | 'inject';
  /** performance.now() when the request left and when its answer came. */
  start: number;
  end: number;
  status: number;
  code?: string;
  /** The report id, action id or injection id the write was about. */
  id?: string | number;
  body: any;
  /** Answered with Idempotent-Replayed: true (a retry's answer, the first try's). */
  replayed?: boolean;
}

/** Every write's answer, in the order they came. */
export class Recorder {
  readonly answers: Answer[] = [];

  async send(kind: Answer['kind'], url: string, init: RequestInit, id?: string | number): Promise<Answer> {
    const start = performance.now();
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const answer: Answer = { kind, start, end: performance.now(), status: res.status, code: body?.code, id, body, replayed: res.headers.get('idempotent-replayed') === 'true' };
    this.answers.push(answer);
    return answer;
  }

  ok(kind?: Answer['kind']): Answer[] {
    return this.answers.filter((a) => a.status >= 200 && a.status < 300 && a.status !== 204 && (kind === undefined || a.kind === kind));
  }
}

/**
 * A change as the README's bot sends it: one Idempotency-Key per intended change, sent again on a
 * 503, a key still in use or a network error, until it is answered otherwise or `deadlineMs` has
 * passed (then the last answer, or undefined when none came). Every try is in the recorder.
 */
export async function sendOnce(recorder: Recorder, kind: Answer['kind'], url: string, init: RequestInit, id?: string | number, deadlineMs = 40_000): Promise<Answer | undefined> {
  const headers = { ...(init.headers as Record<string, string> | undefined), 'idempotency-key': randomUUID() };
  const until = performance.now() + deadlineMs;
  for (;;) {
    const answer = await recorder.send(kind, url, { ...init, headers }, id).catch(() => undefined);
    if (answer !== undefined && answer.status !== 503 && answer.code !== 'IDEMPOTENCY_KEY_IN_USE') return answer;
    if (performance.now() > until) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface ReadyPoll {
  at: number;
  status: number;
  production: string | undefined;
  code: string | undefined;
}

/** Polls GET /ready on each instance every `everyMs` until stopped. */
export function pollReady(urls: string[], everyMs = 100) {
  const polls: ReadyPoll[] = [];
  let stopped = false;
  const loop = async (url: string) => {
    while (!stopped) {
      try {
        const res = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(5_000) });
        const body = (await res.json()) as { code?: string; environments?: { production?: string } };
        polls.push({ at: performance.now(), status: res.status, production: body.environments?.production, code: body.code });
      } catch {
        polls.push({ at: performance.now(), status: 0, production: undefined, code: undefined });
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  const done = Promise.all(urls.map(loop));
  return {
    polls,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/** A trainer (signed in: `headers`) running a training session with an onboarding trainee. */
export async function seedTrainer(db: Db, baseUrl: string): Promise<{ trainer: { cookie: string }; trainerId: string; sessionId: number }> {
  const agent = (overrides: { name: string; status: 'active' | 'onboarding'; clearance_level: number; is_trainer: boolean }) =>
    insertAgent(db, { chat_id: chatId(), agent_rank: 'Agent', ...overrides }).then((a) => a!);
  const trainer = await agent({ name: 'Failover Trainer', status: 'active', clearance_level: 2, is_trainer: true });
  const trainee = await agent({ name: 'Failover Trainee', status: 'onboarding', clearance_level: 1, is_trainer: false });
  const { token } = await createSession(db, 'production', trainer.chat_id);
  const headers = { cookie: `${SESSION_COOKIE}=${token}` };
  const res = await fetch(`${baseUrl}/training/sessions`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ trainee_id: trainee.chat_id }) });
  if (res.status !== 201) throw new Error(`training session not created: ${res.status} ${await res.text()}`);
  return { trainer: headers, trainerId: trainer.chat_id, sessionId: ((await res.json()) as { session: { id: number } }).session.id };
}
