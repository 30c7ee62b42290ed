// A training classroom (issue 11's goal): 20 sessions at once, each trainee posting an action every
// 200 ms and each trainer reading the session payload every second, for 60 s on PostgreSQL. The load
// is open loop, as people at keyboards are: timers send on schedule whether or not the last answer
// came back, so a slow answer cannot slow the load down and hide itself. A few percent of the posts
// repeat an earlier client_id (a retry); afterwards the database must hold exactly one trainee action
// per client_id the service accepted.
import { DEMO_SCENARIOS } from '../../src/demo/seed-scenarios.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { TRAINEE_ACTIONS } from '../../src/training/scenario-file.js';
import type { TraineeActionBody } from '../../src/training/session-schemas.js';
import { SESSION_EVENTS_LIMIT } from '../../src/training/session-view.js';
import { openSessions, ORIGIN, seatClassroom, sessionCookie, trainingBrowser, type Seat } from '../lib/classroom.js';
import { BUSY_CORES, OtherLoad, waitQuiet } from '../lib/machine.js';
import { every } from '../lib/open-loop.js';
import { withOwnService } from '../lib/own-service.js';
import { percentile } from '../lib/stats.js';
import type { Context, ResultLine, Scenario } from '../types.js';

const SESSIONS = 20;
const LOAD_SECONDS = 60;
const ACTION_PERIOD_MS = 200;
const POLL_PERIOD_MS = 1000;
const TARGET_ACTIONS_PER_SECOND = (SESSIONS * 1000) / ACTION_PERIOD_MS;
const P99_GOAL_MS = 50;
/** Below this share of the target rate the load generator fell behind: the p99s would describe a lighter load. */
const RATE_GOAL_SHARE = 0.99;
/** Every 30th post repeats the client_id posted 5 ticks (1 s) earlier, answered by then: a retry, 3.3% of the posts. */
const REPEAT_EVERY = 30;
const REPEAT_LAG = 5;
const SLUGS = ['first-response', 'ban-evasion'] as const;

type Action = Omit<TraineeActionBody, 'client_id'>;
/** What a trainee does, in turn: read the evidence (the locked item too, until it unlocks), note, ask, decide. */
const ACTION_CYCLE: Array<(evidence: string[]) => Action> = [
  (e) => ({ type: 'OPEN_EVIDENCE', target: e[0]! }),
  () => ({ type: 'ADD_FINDING', payload: { text: 'The same callsign shows up on both accounts' } }),
  (e) => ({ type: 'OPEN_EVIDENCE', target: e[1]! }),
  () => ({ type: 'CONTACT_PARTY', target: 'reporter', payload: { message: 'Can you tell me when this started?' } }),
  () => ({ type: 'ADD_FINDING', payload: { text: 'A witness confirms the report' } }),
  () => ({ type: 'SUBMIT_DECISION', payload: { decision: 'valid', reason: 'Evidence and witness agree' } }),
];

/** A seat of the classroom (bench/lib/classroom.ts) whose trainee is signed in too, with their scenario's evidence keys. */
type TraineeSeat = Seat & { evidence: string[]; traineeCookie: string };

/** `at`: performance.now() when sent; status 0: no answer (connection error or timeout). */
interface Sample { at: number; ms: number; status: number }

/** Half the trainers flagged, half Supervisors (trainers by rank); the two demo scenarios in turn. */
async function prepare(db: Db, seats: TraineeSeat[]): Promise<void> {
  const slug = (i: number) => SLUGS[i % SLUGS.length]!;
  for (const seat of await seatClassroom(db, SESSIONS, { trainers: '31', trainees: '32', flagged: (i) => i % 2 === 0, slug })) {
    const evidence = DEMO_SCENARIOS.find((s) => s.slug === slug(seat.index))!.definition.evidence.map((e) => e.key);
    seats.push({ ...seat, evidence, traineeCookie: await sessionCookie(db, seat.traineeId) });
  }
}

const latencyLines = (ctx: Context, name: string, samples: Sample[]): ResultLine[] => {
  const ms = samples.map((s) => s.ms);
  const p99 = percentile(ms, 0.99);
  return [
    ctx.line(`${name} p99`, p99, 'ms', { text: `< ${P99_GOAL_MS} ms`, ok: p99 < P99_GOAL_MS }),
    ctx.line(`${name} p50`, percentile(ms, 0.5), 'ms'),
    ctx.line(`${name} max`, Math.max(...ms), 'ms'),
    ctx.line(`${name} requests`, samples.length, 'requests'),
  ];
};

/** p99 per 10 s of the window: does it grow as the sessions' events pile up? */
const p99ByWindow = (samples: Sample[], from: number) =>
  Array.from({ length: Math.ceil(LOAD_SECONDS / 10) }, (_, w) => samples.filter((s) => Math.floor((s.at - from) / 10_000) === w))
    .map((part) => percentile(part.map((s) => s.ms), 0.99).toFixed(0))
    .join(' ');

const statusCounts = (samples: Sample[]) => JSON.stringify(samples.reduce<Record<number, number>>((c, s) => ({ ...c, [s.status]: (c[s.status] ?? 0) + 1 }), {}));

async function classroom(ctx: Context, url: string, databaseUrl: string, seats: TraineeSeat[]): Promise<ResultLine[]> {
  const browser = trainingBrowser(2 * SESSIONS);
  try {
    await openSessions(browser, seats, () => url);

    const events: Sample[] = [];
    const payloads: Sample[] = [];
    const late: number[] = [];
    const accepted = new Set<string>();
    let repeats = 0;
    let duplicated = 0;
    let lastAnswer = 0;
    const pending: Promise<void>[] = [];
    const timed = (into: Sample[], send: () => Promise<{ status: number; body: string }>, then: (status: number, body: string) => void = () => undefined) => {
      const at = performance.now();
      pending.push(
        send().then(
          (a) => ((lastAnswer = performance.now()), into.push({ at, ms: lastAnswer - at, status: a.status }), then(a.status, a.body)),
          () => void into.push({ at, ms: performance.now() - at, status: 0 }),
        ),
      );
    };

    // The harness's warm-up (connections, prepared statements, JIT) runs the same load, discarded.
    await waitQuiet(ctx.options.quietWait * 1000);
    const load = new OtherLoad();
    const start = performance.now();
    const measuredFrom = start + ctx.options.warmup * 1000;
    const end = measuredFrom + LOAD_SECONDS * 1000;
    ctx.log(`    ${SESSIONS} sessions started; ${ctx.options.warmup} s warm-up, then ${LOAD_SECONDS} s: ${TARGET_ACTIONS_PER_SECOND} actions/s, ${(SESSIONS * 1000) / POLL_PERIOD_MS} polls/s`);
    // Random phases: twenty people do not click in step.
    await Promise.all(
      seats.flatMap((seat) => [
        every(start, Math.random() * ACTION_PERIOD_MS, ACTION_PERIOD_MS, end, late, (n) => {
          const repeat = n >= REPEAT_LAG && n % REPEAT_EVERY === REPEAT_EVERY - 1;
          const k = repeat ? n - REPEAT_LAG : n;
          const clientId = `s${seat.sessionId}-a${k}`;
          if (repeat) repeats++;
          const body = { ...ACTION_CYCLE[k % ACTION_CYCLE.length]!(seat.evidence), client_id: clientId };
          timed(events, () => browser.request('POST', `${url}/training/sessions/${seat.sessionId}/events`, seat.traineeCookie, body), (status, text) => {
            if (status === 201) accepted.add(clientId);
            if (status === 200 && (JSON.parse(text) as { duplicated: boolean }).duplicated) duplicated++;
          });
        }),
        every(start, Math.random() * POLL_PERIOD_MS, POLL_PERIOD_MS, end, late, () =>
          timed(payloads, () => browser.request('GET', `${url}/training/sessions/${seat.sessionId}`, seat.trainerCookie)),
        ),
      ]),
    );
    await Promise.all(pending);
    const otherCores = load.cores();

    const inWindow = (s: Sample) => s.at >= measuredFrom;
    const measuredEvents = events.filter(inWindow);
    const measuredPayloads = payloads.filter(inWindow);
    const failed = [...events, ...payloads].filter((s) => s.status < 200 || s.status >= 300);
    // Answered actions over the window, stretched to the last answer if the service fell behind.
    const answered = measuredEvents.filter((s) => s.status >= 200 && s.status < 300).length;
    const rate = answered / ((Math.max(end, lastAnswer) - measuredFrom) / 1000);
    ctx.log(`    events endpoint statuses ${statusCounts(events)}, payload statuses ${statusCounts(payloads)} (warm-up included)`);
    ctx.log(`    p99 (ms) by 10 s: events ${p99ByWindow(measuredEvents, measuredFrom)}; payload ${p99ByWindow(measuredPayloads, measuredFrom)}`);
    const busy = otherCores >= BUSY_CORES ? ' (WARNING: the machine was busy, these latencies are unreliable)' : '';
    ctx.log(`    timers fired late by p99 ${percentile(late, 0.99).toFixed(1)} ms, max ${Math.max(...late).toFixed(1)} ms; other processes used ${otherCores.toFixed(2)} cores${busy}`);

    const [first] = seats;
    const finalPage = await browser.call<{ events: unknown[] }>('GET', `${url}/training/sessions/${first!.sessionId}`, first!.trainerCookie);
    const stored = await inDatabase(databaseUrl, seats.map((s) => s.sessionId));
    const fullPage = Math.min(SESSION_EVENTS_LIMIT, stored.eventsOf(first!.sessionId));
    ctx.log(`    database: ${stored.actions} trainee actions (${stored.distinctIds} distinct client_ids) for ${accepted.size} accepted; events per session ${stored.counts.join(', ')}`);
    return [
      ...latencyLines(ctx, 'POST events (trainee action)', measuredEvents),
      ...latencyLines(ctx, 'GET session payload (trainer)', measuredPayloads),
      ctx.line('errors (non-2xx or no answer)', failed.length, 'requests', { text: '= 0', ok: failed.length === 0 }),
      ctx.line(`actions answered/s (target ${TARGET_ACTIONS_PER_SECOND})`, rate, 'req/s', {
        text: `>= ${RATE_GOAL_SHARE * TARGET_ACTIONS_PER_SECOND}`,
        ok: rate >= RATE_GOAL_SHARE * TARGET_ACTIONS_PER_SECOND,
      }),
      ctx.line('repeated client_ids answered duplicated', duplicated, 'requests', { text: `= ${repeats} sent`, ok: duplicated === repeats }),
      ctx.line('trainee actions recorded in the database', stored.actions, 'events', {
        text: `= ${accepted.size} client_ids accepted, all distinct`,
        ok: stored.actions === accepted.size && stored.distinctIds === stored.actions,
      }),
      ctx.line('events per session at the end (min)', Math.min(...stored.counts), 'events'),
      ctx.line('events per session at the end (max)', Math.max(...stored.counts), 'events'),
      ctx.line('events in a payload after the load', finalPage.events.length, 'events', { text: `= ${fullPage} (capped at ${SESSION_EVENTS_LIMIT})`, ok: finalPage.events.length === fullPage }),
      ctx.line('other processes during the load', otherCores, 'cores'),
    ];
  } finally {
    browser.close();
  }
}

/** What the database recorded: trainee actions (and their distinct client_ids), all events per session. */
async function inDatabase(databaseUrl: string, sessionIds: number[]) {
  const db = openPostgres({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows } = await db.query<{ actions: number; distinct_ids: number }>(
      `select count(*)::int as actions, count(distinct (training_session_id, client_id))::int as distinct_ids
       from events where training_session_id = any($1::bigint[]) and type = any($2::text[])`,
      [sessionIds, TRAINEE_ACTIONS],
    );
    const perSession = await db.query<{ id: number; n: number }>(
      'select training_session_id as id, count(*)::int as n from events where training_session_id = any($1::bigint[]) group by 1',
      [sessionIds],
    );
    const counts = new Map(perSession.rows.map((r) => [r.id, r.n]));
    return { actions: rows[0]!.actions, distinctIds: rows[0]!.distinct_ids, eventsOf: (id: number) => counts.get(id) ?? 0, counts: [...counts.values()] };
  } finally {
    await db.close();
  }
}

export const trainingClassroom: Scenario = {
  name: 'training-classroom',
  description: `${SESSIONS} training sessions: a trainee action every ${ACTION_PERIOD_MS} ms and a trainer poll every second each, ${LOAD_SECONDS} s open loop (PostgreSQL only)`,
  needs: [],
  async run(ctx) {
    if (!ctx.options.pg) {
      ctx.log('    skipped: the goal is PostgreSQL\'s (run with --pg <url>)');
      return [];
    }
    const seats: TraineeSeat[] = [];
    return withOwnService(ctx, (service) => classroom(ctx, service.url, service.databaseUrl!, seats), { prepare: (db) => prepare(db, seats), env: { TRAINING_ORIGINS: ORIGIN } });
  },
};
