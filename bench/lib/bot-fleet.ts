// A fleet of bot workers draining one of the service's queues over HTTP, as the real bot does:
// claim with `next`, complete, repeat; spread over several instances; a worker whose instance
// stops answering moves to another one. It records what each worker was handed, so the caller
// can prove every item was completed exactly once. Shared by the exactly-once test and the bench.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

export type FleetQueue = 'actions' | 'discipline';

const ROUTES: Record<FleetQueue, { next: string; complete: (id: number) => string; idOf: (body: any) => number }> = {
  actions: { next: '/actions/next', complete: (id) => `/actions/${id}/complete`, idOf: (b) => b.action.action_id },
  discipline: { next: '/discipline/next', complete: (id) => `/discipline/${id}/complete`, idOf: (b) => b.item.item_id },
};
const ALREADY_COMPLETED: Record<FleetQueue, string> = { actions: 'ACTION_ALREADY_COMPLETED', discipline: 'DISCIPLINE_ALREADY_COMPLETED' };

export interface FleetOptions {
  /** Base URLs of the instances, e.g. http://127.0.0.1:3001. */
  instances: string[];
  apiKey: string;
  queue: FleetQueue;
  workers: number;
  /** How many items the queue holds: the fleet stops once this many are completed. */
  total: number;
  /** Give up (and throw) after this long. */
  deadlineMs: number;
  /** Called after each completion with the running count (e.g. to kill an instance mid-way). */
  onCompleted?(completed: number): void | Promise<void>;
  /** Each claim and completion with an Idempotency-Key of its own (kept for its retries). */
  idempotencyKeys?: boolean;
}

export interface FleetResult {
  /** Item id -> how many times a worker was handed it. Exactly once: every value is 1. */
  handouts: Map<number, number>;
  /** Item ids completed, by a 200 or by a 409 "already completed" after a lost response. */
  completed: Set<number>;
  /** Completions answered 409 already completed (the first attempt's answer was lost). */
  alreadyCompleted: number;
  connectionErrors: number;
  /** Latency of each `next` that handed out an item, in ms. */
  claimLatencies: number[];
  elapsedMs: number;
}

interface Answer {
  status: number;
  body: string;
}

export class InstanceDown extends Error {}

export function createFleetClient(workers: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: workers });
  const request = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, body?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = http.request(url, { method, agent, headers: body ? { ...headers, 'content-type': 'application/json' } : headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', (err) => reject(new InstanceDown(err.message)));
      });
      req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
      req.on('error', (err) => reject(new InstanceDown(err.message)));
      req.end(body);
    });
  return { request, close: () => agent.destroy() };
}

/** Drains the queue until `total` items are completed; throws on any answer a bot would not expect. */
export async function drainQueue(options: FleetOptions): Promise<FleetResult> {
  const routes = ROUTES[options.queue];
  const client = createFleetClient(options.workers);
  const plain = { authorization: options.apiKey };
  // One key per claim and per completion, the same for its retries (to another instance after a lost answer).
  const keyed = (key: string | undefined) => (key === undefined ? plain : { ...plain, 'idempotency-key': key });
  const newKey = () => (options.idempotencyKeys ? randomUUID() : undefined);
  const down = new Set<string>();
  const result: FleetResult = { handouts: new Map(), completed: new Set(), alreadyCompleted: 0, connectionErrors: 0, claimLatencies: [], elapsedMs: 0 };
  const started = performance.now();
  const deadline = started + options.deadlineMs;
  const done = () => result.completed.size >= options.total;
  const instanceFor = (worker: number, attempt: number) => {
    const up = options.instances.filter((url) => !down.has(url));
    if (up.length === 0) throw new Error('every instance is down');
    return up[(worker + attempt) % up.length]!;
  };

  async function complete(worker: number, id: number): Promise<void> {
    const key = newKey();
    for (let attempt = 0; ; attempt++) {
      const base = instanceFor(worker, attempt);
      let answer: Answer;
      try {
        answer = await client.request('POST', base + routes.complete(id), keyed(key), JSON.stringify({ result: 'success', note: `worker ${worker}` }));
      } catch (err) {
        if (!(err instanceof InstanceDown)) throw err;
        result.connectionErrors++;
        down.add(base);
        continue;
      }
      if (answer.status === 409 && JSON.parse(answer.body).code === ALREADY_COMPLETED[options.queue]) result.alreadyCompleted++;
      else if (answer.status !== 200) throw new Error(`complete ${id}: ${answer.status} ${answer.body}`);
      result.completed.add(id);
      await options.onCompleted?.(result.completed.size);
      return;
    }
  }

  async function work(worker: number): Promise<void> {
    let attempt = 0;
    let key = newKey();
    while (!done()) {
      if (performance.now() > deadline) throw new Error(`deadline: ${result.completed.size} of ${options.total} completed`);
      const base = instanceFor(worker, attempt);
      const t0 = performance.now();
      let answer: Answer;
      try {
        answer = await client.request('GET', base + routes.next, keyed(key));
      } catch (err) {
        if (!(err instanceof InstanceDown)) throw err;
        result.connectionErrors++;
        down.add(base);
        attempt++;
        continue;
      }
      // Answered: the next claim is another request, with a key of its own.
      key = newKey();
      if (answer.status === 204) {
        // Empty for now: items may still come back from a sweep, or be completed by others.
        await sleep(25);
        continue;
      }
      if (answer.status !== 200) throw new Error(`next: ${answer.status} ${answer.body}`);
      result.claimLatencies.push(performance.now() - t0);
      const id = routes.idOf(JSON.parse(answer.body));
      result.handouts.set(id, (result.handouts.get(id) ?? 0) + 1);
      await complete(worker, id);
    }
  }

  try {
    await Promise.all(Array.from({ length: options.workers }, (_, w) => work(w)));
  } finally {
    client.close();
  }
  result.elapsedMs = performance.now() - started;
  return result;
}

/** Every handed-out item exactly once, and exactly the expected ids completed. */
export function exactlyOnceProblems(result: FleetResult, expectedIds: readonly number[]): string[] {
  const problems: string[] = [];
  const twice = [...result.handouts].filter(([, n]) => n > 1).map(([id]) => id);
  if (twice.length) problems.push(`handed out more than once: ${twice.slice(0, 10).join(', ')}${twice.length > 10 ? ' ...' : ''}`);
  const missing = expectedIds.filter((id) => !result.completed.has(id));
  if (missing.length) problems.push(`never completed: ${missing.slice(0, 10).join(', ')}`);
  if (result.completed.size !== expectedIds.length) problems.push(`completed ${result.completed.size}, expected ${expectedIds.length}`);
  return problems;
}

export interface KillPlan {
  /** Pass as FleetOptions.onCompleted. */
  onCompleted(completed: number): Promise<void>;
  /** Items claimed through the doomed instance for a bot that died with it. */
  orphaned: number[];
}

/**
 * Kills an instance once `at` items are completed. Just before, `orphans` items are claimed
 * through it and never completed, as by a bot that died with it: they stay in processing until the
 * stale sweep hands them out again.
 */
export function killPartWay(options: { queue: FleetQueue; url: string; apiKey: string; at: number; orphans?: number; kill(): void }): KillPlan {
  const orphaned: number[] = [];
  let killed = false;
  return {
    orphaned,
    async onCompleted(completed) {
      if (killed || completed < options.at) return;
      killed = true;
      for (let i = 0; i < (options.orphans ?? 3); i++) {
        const res = await fetch(options.url + ROUTES[options.queue].next, { headers: { authorization: options.apiKey } });
        if (res.status === 200) orphaned.push(ROUTES[options.queue].idOf(await res.json()));
      }
      options.kill();
    },
  };
}
