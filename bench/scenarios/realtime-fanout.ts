// Realtime fan-out at classroom scale (issue 12's goal; realtime-fanout-10k: ten times it, issue 22): two instances of the service on one
// PostgreSQL database, as behind a load balancer; 2,000 WebSocket subscribers, half on each, across
// 100 training sessions; every trainer producing one broadcast a second for 60 s, open loop. A
// broadcast reaches the other instance only through NOTIFY, so every subscriber receiving every
// broadcast of its topic proves the fan-out. Latency is the frame's arrival minus the event's
// created_at: now() of the recording transaction, at or before its commit, so an upper bound of
// commit to receipt. Memory is each instance's RSS growth from before the clients connect to after
// all have joined, per connection (Supabase's Elixir server: about 160 KB a connection on 2 vCPU).
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Db } from '../../src/platform/db/types.js';
import { REALTIME_CHANNEL } from '../../src/platform/environments.js';
import { mintToken } from '../../src/realtime/tokens.js';
import { sessionTopic, userTopic } from '../../src/training/broadcaster.js';
import { openSessions, ORIGIN, seatClassroom, trainingBrowser, type Seat } from '../lib/classroom.js';
import { GC_SIGNAL, gcOnSignalEnv, memoryUsageOf } from '../lib/gc-on-signal.js';
import { BUSY_CORES, OtherLoad, waitQuiet } from '../lib/machine.js';
import { every } from '../lib/open-loop.js';
import { withOwnService, type OwnService } from '../lib/own-service.js';
import { Subscribers } from '../lib/phoenix-clients.js';
import { memoryMb, settle } from '../lib/proc.js';
import { freshDataDir } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import type { Context, ResultLine, Scenario } from '../types.js';

const INSTANCES = 2;
/** Per session and instance: one client on each member's user channel, these on the session channel. */
const SESSION_SUBSCRIBERS = 8;

/** How many sessions (a trainer each), and the memory goal at that many connections. */
interface Scale {
  sessions: number;
  kbPerConnectionGoal: number;
}
/** Issue 12: 100 sessions, 2,000 clients. Issue 22: ten times the load, 500 sessions, 10,000 clients. */
const CLASSROOM: Scale = { sessions: 100, kbPerConnectionGoal: 50 };
const TENFOLD: Scale = { sessions: 500, kbPerConnectionGoal: 16 };
/** Math.max(...values) overflows the stack past some 100,000 values (600,000 deliveries at 10,000 clients). */
const largest = (values: readonly number[]) => values.reduce((a, b) => Math.max(a, b), -Infinity);
const clientsOf = (scale: Scale) => scale.sessions * INSTANCES * (2 + SESSION_SUBSCRIBERS);
const LOAD_SECONDS = 60;
const BROADCAST_PERIOD_MS = 1000;
const P99_GOAL_MS = 100;
/** Joins in flight at once: 2,000 clients in seconds, without a storm that would time joins out. */
const JOIN_CONCURRENCY = 50;
/** After the last answer, how long a broadcast may still be on its way before it counts as lost. */
const DRAIN_MS = 3000;
/** A full collection of a ~100 MB heap takes tens of ms; RSS is read well after. */
const GC_WAIT_MS = 1000;
const SECRET = 'bench-realtime-signing-secret-0123456789abcdef';
/** An evidence item of the demo scenario first-response: released and locked in turn. */
const EVIDENCE_KEY = 'witness';
const SLUG = 'first-response';
/**
 * Other databases' work on the same PostgreSQL server: machine.ts counts every postgres process as
 * ours, so it is invisible there, yet it competes for the disk and for the lock every NOTIFY-ing
 * commit takes server-wide. Active backends of other databases, sampled each 500 ms; a mean above
 * BUSY_BACKENDS flags the latencies as unreliable, as BUSY_CORES does.
 */
const FOREIGN_SQL = `select count(*)::int as n from pg_stat_activity
  where state = 'active' and backend_type = 'client backend' and datname is distinct from current_database() and pid <> pg_backend_pid()`;
const BUSY_BACKENDS = 0.25;
/** One broadcast-producing request: where it went, when, and the event id it recorded. */
interface Sent { at: number; topics: string[]; status: number; id?: number; measured: boolean }

/** Flagged trainers, each with their trainee, all on the same demo scenario (bench/lib/classroom.ts). */
async function prepare(db: Db, seats: Seat[], scale: Scale): Promise<void> {
  seats.push(...(await seatClassroom(db, scale.sessions, { trainers: '33', trainees: '34', flagged: () => true, slug: () => SLUG })));
}

/** Per instance, in kB after a full collection (gc-on-signal.ts): VmRSS from /proc, and the heap used plus memory outside it. */
async function memory(service: OwnService, dir: string): Promise<Array<{ rss: number; heap: number }>> {
  for (const child of service.instances) process.kill(child.pid, GC_SIGNAL);
  await sleep(GC_WAIT_MS);
  return service.instances.map((c) => {
    const usage = memoryUsageOf(dir, c.pid);
    return { rss: memoryMb(c.pid).rss * 1024, heap: (usage.heapUsed + usage.external) / 1024 };
  });
}

async function fanout(ctx: Context, service: OwnService, seats: Seat[], memoryDir: string, scale: Scale): Promise<ResultLine[]> {
  const CLIENTS = clientsOf(scale);
  const urls = service.instances.map((c) => c.url);
  const http = trainingBrowser(scale.sessions);
  const subs = new Subscribers([]);
  let listener: pg.Client | undefined;
  try {
    await openSessions(http, seats, (seat) => urls[seat.index % INSTANCES]!);
    // Every subscriber, interleaved over the instances so that each holds exactly half; both members' tokens on the session channel.
    const list = subs.list;
    for (const seat of seats) {
      for (let instance = 0; instance < INSTANCES; instance++) {
        list.push({ topic: userTopic(seat.trainerId), chatId: seat.trainerId, instance });
        list.push({ topic: userTopic(seat.traineeId), chatId: seat.traineeId, instance });
        for (let k = 0; k < SESSION_SUBSCRIBERS; k++) list.push({ topic: sessionTopic(seat.sessionId), chatId: k % 2 ? seat.traineeId : seat.trainerId, instance });
      }
    }
    const subscribersOf = new Map<string, number>();
    for (const sub of list) subscribersOf.set(sub.topic, (subscribersOf.get(sub.topic) ?? 0) + 1);

    // Memory before: the HTTP path has run (sessions created and started), the instances are idle.
    for (const child of service.instances) await settle(child);
    const before = await memory(service, memoryDir);
    const tokens = new Map<string, string>();
    for (const seat of seats) for (const id of [seat.trainerId, seat.traineeId]) tokens.set(id, (await mintToken('production', SECRET, id)).token);
    const joinStart = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: JOIN_CONCURRENCY }, async () => {
      while (next < list.length) {
        const i = next++;
        await subs.join(i, urls[list[i]!.instance]!, tokens.get(list[i]!.chatId)!);
      }
    }));
    subs.startHeartbeats();
    const open = subs.open();
    ctx.log(`    ${open} of ${CLIENTS} clients joined in ${((performance.now() - joinStart) / 1000).toFixed(1)} s (${subs.refused} refused)`);
    for (const child of service.instances) await settle(child);
    const joined = await memory(service, memoryDir);
    const perInstance = CLIENTS / INSTANCES;

    // The bench LISTENs too: when PostgreSQL handed each broadcast out splits the latency into the database's part and the hub's.
    const heard = new Map<number, number>();
    const client = (listener = new pg.Client({ connectionString: service.databaseUrl }));
    await client.connect();
    client.on('notification', (n) => {
      for (const [, , payload] of (JSON.parse(n.payload ?? '{}') as { m?: [string, string, { event: { id: number } }][] }).m ?? []) heard.set(payload.event.id, Date.now());
    });
    await client.query(`listen ${REALTIME_CHANNEL}`);

    // The load: each trainer, in turn, releases or locks evidence (the session channel) and injects a message (both user channels).
    const sent: Sent[] = [];
    const pending: Promise<void>[] = [];
    const late: number[] = [];
    await waitQuiet(ctx.options.quietWait * 1000);
    const load = new OtherLoad();
    const foreign: number[] = [];
    const sampler = setInterval(() => void client.query<{ n: number }>(FOREIGN_SQL).then((r) => foreign.push(r.rows[0]!.n), () => undefined), 500);
    const start = performance.now();
    const measuredFrom = start + ctx.options.warmup * 1000;
    const end = measuredFrom + LOAD_SECONDS * 1000;
    ctx.log(`    ${scale.sessions} sessions; ${ctx.options.warmup} s warm-up, then ${LOAD_SECONDS} s: ${(scale.sessions * 1000) / BROADCAST_PERIOD_MS} broadcast requests/s over ${INSTANCES} instances`);
    await Promise.all(seats.map((seat) => every(start, Math.random() * BROADCAST_PERIOD_MS, BROADCAST_PERIOD_MS, end, late, (n) => {
      const instance = (seat.index + n) % INSTANCES;
      const evidence = n % 2 === 0;
      const path = evidence ? `/training/sessions/${seat.sessionId}/evidence/${EVIDENCE_KEY}/${n % 4 === 0 ? 'release' : 'lock'}` : `/training/sessions/${seat.sessionId}/inject`;
      const topics = evidence ? [sessionTopic(seat.sessionId)] : [userTopic(seat.trainerId), userTopic(seat.traineeId)];
      const s: Sent = { at: Date.now(), topics, status: 0, measured: performance.now() >= measuredFrom };
      sent.push(s);
      const body = evidence ? {} : { type: 'custom_message', content: `Tick ${n}: check the radio log` };
      const answered = http.request('POST', urls[instance] + path, seat.trainerCookie, body).then((a) => {
        s.status = a.status;
        if (a.status < 300) s.id = (JSON.parse(a.body) as { event: { id: number } }).event.id;
      });
      pending.push(answered.catch(() => undefined)); // no answer: status 0, an error
    })));
    await Promise.all(pending);
    const otherCores = load.cores();
    clearInterval(sampler);
    const foreignBackends = foreign.reduce((a, b) => a + b, 0) / Math.max(1, foreign.length);
    await sleep(DRAIN_MS);
    const loaded = await memory(service, memoryDir);

    // Reconciliation: every answered request's event, at every subscriber of its topics, once.
    const byId = new Map(sent.filter((s) => s.id !== undefined).map((s) => [s.id!, s]));
    const answered = [...byId.values()];
    const expected = answered.reduce((n, s) => n + s.topics.reduce((m, t) => m + (subscribersOf.get(t) ?? 0), 0), 0);
    const seen = new Set<string>();
    let strays = 0;
    const commit: number[] = [], request: number[] = [], database: number[] = [], hub: number[] = [];
    const windows: number[][] = Array.from({ length: Math.ceil(LOAD_SECONDS / 10) }, () => []);
    const from = Date.now() - (performance.now() - measuredFrom);
    for (const r of subs.receipts) {
      const s = byId.get(r.id);
      const key = `${r.sub}:${r.id}`;
      if (!s || !s.topics.includes(list[r.sub]!.topic) || seen.has(key)) {
        strays++;
        continue;
      }
      seen.add(key);
      if (!s.measured) continue;
      commit.push(r.at - r.createdAt);
      const notified = heard.get(r.id);
      if (notified !== undefined) {
        database.push(notified - r.createdAt);
        hub.push(r.at - notified);
      }
      request.push(r.at - s.at);
      windows[Math.min(windows.length - 1, Math.floor((s.at - from) / 10_000))]?.push(r.at - r.createdAt);
    }
    const failed = sent.filter((s) => s.status < 200 || s.status >= 300);
    const p = (v: number[], q: number) => percentile(v, q).toFixed(0);
    ctx.log(`    commit->receipt p99 (ms) by 10 s: ${windows.map((w) => p(w, 0.99)).join(' ')}`);
    ctx.log(`    p50: created_at->NOTIFY heard by the bench ${p(database, 0.5)} ms, heard->receipt ${p(hub, 0.5)} ms`);
    const mb = (kb: number) => (kb / 1024).toFixed(1);
    ctx.log(`    MB per instance before / joined / after the load: ${before.map((b, i) => `RSS ${mb(b.rss)} / ${mb(joined[i]!.rss)} / ${mb(loaded[i]!.rss)}, heap+external ${mb(b.heap)} / ${mb(joined[i]!.heap)} / ${mb(loaded[i]!.heap)}`).join('; ')}`);
    const busy = otherCores >= BUSY_CORES || foreignBackends >= BUSY_BACKENDS ? ' (WARNING: the machine was busy, these latencies are unreliable)' : '';
    ctx.log(`    timers fired late by p99 ${percentile(late, 0.99).toFixed(1)} ms, max ${largest(late).toFixed(1)} ms; other processes used ${otherCores.toFixed(2)} cores, other databases ${foreignBackends.toFixed(2)} active backends${busy}`);
    if (subs.problems.length) ctx.log(`    first problems: ${subs.problems.slice(0, 5).join(' | ')}`);
    const errors = failed.length + subs.problems.length - subs.refused;
    return [
      ctx.line('clients joined', open, 'clients', { text: `= ${CLIENTS}`, ok: open === CLIENTS }),
      ctx.line('refused joins', subs.refused, 'joins', { text: '= 0', ok: subs.refused === 0 }),
      ctx.line('broadcast requests answered 2xx', answered.length, 'requests', { text: `= ${sent.length} sent`, ok: answered.length === sent.length }),
      ctx.line('broadcasts sent (messages)', answered.reduce((n, s) => n + s.topics.length, 0), 'messages'),
      ctx.line('deliveries expected', expected, 'frames'),
      ctx.line('deliveries received', seen.size, 'frames', { text: `= ${expected} (100%)`, ok: seen.size === expected && expected > 0 }),
      ctx.line('duplicate or stray frames', strays, 'frames', { text: '= 0', ok: strays === 0 }),
      ctx.line('commit->receipt p99', percentile(commit, 0.99), 'ms', { text: `< ${P99_GOAL_MS} ms`, ok: commit.length > 0 && percentile(commit, 0.99) < P99_GOAL_MS }),
      ctx.line('commit->receipt p50', percentile(commit, 0.5), 'ms'),
      ctx.line('commit->receipt max', largest(commit), 'ms'),
      ctx.line('  of which created_at->NOTIFY heard (database) p99', percentile(database, 0.99), 'ms'),
      ctx.line('  of which NOTIFY heard->receipt (hub) p99', percentile(hub, 0.99), 'ms'),
      ctx.line('request->receipt p99', percentile(request, 0.99), 'ms'),
      ctx.line('request->receipt p50', percentile(request, 0.5), 'ms'),
      ctx.line('errors (non-2xx, no answer, socket errors, closes, unexpected frames)', errors, 'errors', { text: '= 0', ok: errors === 0 }),
      ...before.flatMap((b, i) => {
        const rss = (joined[i]!.rss - b.rss) / perInstance;
        return [
          ctx.line(`instance ${i + 1} RSS growth per connection (joined)`, rss, 'KB', { text: `< ${scale.kbPerConnectionGoal} KB`, ok: rss < scale.kbPerConnectionGoal }),
          ctx.line(`instance ${i + 1} heap+external growth per connection (joined)`, (joined[i]!.heap - b.heap) / perInstance, 'KB'),
          ctx.line(`instance ${i + 1} RSS growth per connection (after the load)`, (loaded[i]!.rss - b.rss) / perInstance, 'KB'),
        ];
      }),
      ctx.line('other processes during the load', otherCores, 'cores'),
      ctx.line('other databases\' active backends during the load (mean)', foreignBackends, 'backends'),
    ];
  } finally {
    subs.close();
    http.close();
    await listener?.end();
  }
}

function fanoutScenario(name: string, scale: Scale, onlyWhenNamed: boolean): Scenario {
  return {
    name,
    description: `${clientsOf(scale)} realtime subscribers over ${INSTANCES} instances, ${scale.sessions} sessions, a broadcast per session per second for ${LOAD_SECONDS} s (PostgreSQL only)`,
    needs: [],
    onlyWhenNamed,
    async run(ctx) {
      if (!ctx.options.pg) {
        ctx.log('    skipped: the goal is PostgreSQL\'s, with two instances (run with --pg <url>)');
        return [];
      }
      const seats: Seat[] = [];
      const memoryDir = freshDataDir();
      const env = { TRAINING_ORIGINS: ORIGIN, PRODUCTION_REALTIME_SIGNING_SECRET: SECRET, ...gcOnSignalEnv(memoryDir) };
      return withOwnService(ctx, (service) => fanout(ctx, service, seats, memoryDir, scale), { prepare: (db) => prepare(db, seats, scale), env, instances: INSTANCES });
    },
  };
}

export const realtimeFanout = fanoutScenario('realtime-fanout', CLASSROOM, false);
/** Issue 22: ten times the classroom load; run by name (it holds 10,000 sockets on the load generator). */
export const realtimeFanoutTenfold = fanoutScenario('realtime-fanout-10k', TENFOLD, true);
