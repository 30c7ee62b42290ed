// What an Idempotency-Key costs (issue 41): report creation and the bot's queue drain (next and
// complete) with a key of its own on every request against the same without, side by side on one
// service. A keyed request runs in one transaction with its answer, which it stores: the goal is
// at least 0.9 of the unkeyed throughput for both.
//
//   npm run bench -- --only idempotency-cost --pg postgres://root@127.0.0.1:5432/test
import { randomUUID } from 'node:crypto';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { abba, alternateDrains, drainedBy, drainRate } from '../lib/alternate-drains.js';
import { drainQueue, exactlyOnceProblems } from '../lib/bot-fleet.js';
import { createLoad, reportBody } from '../lib/create-report.js';
import { withOwnService } from '../lib/own-service.js';
import { seedActions } from '../lib/queue-seed.js';
import { API_KEY } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import type { Scenario } from '../types.js';

const GOAL = 0.9;
const WORKERS = 16;
const PER_ROUND = 2_000;
const ORDER = abba('keyed' as const, 'plain' as const, 2);

export const idempotencyCost: Scenario = {
  name: 'idempotency-cost',
  description: `POST /reports/create and a queue drain (${WORKERS} workers), each request with an Idempotency-Key against without, side by side on one service (goal >= ${GOAL})`,
  needs: [],
  async run(ctx) {
    return withOwnService(
      ctx,
      async (service) => {
        // 1. Creates: autocannon alternating rounds of each side (ctx.compare).
        const keyed = { ...createLoad(service.url, reportBody('IK-K-[<id>]'), 'creates with keys'), headersFor: () => ({ 'idempotency-key': randomUUID() }) };
        const plain = createLoad(service.url, reportBody('IK-P-[<id>]'), 'creates without');
        const creates = await ctx.compare(keyed, plain);
        if (creates.a.non2xx + creates.b.non2xx > 0) throw new Error(`creates: ${creates.a.non2xx} and ${creates.b.non2xx} answers not 2xx`);
        ctx.log(`    creates: ${creates.a.reqPerSec.toFixed(0)} with keys, ${creates.b.reqPerSec.toFixed(0)} without (req/s); p99 ${creates.a.latencyMs.p99.toFixed(1)} and ${creates.b.latencyMs.p99.toFixed(1)} ms`);

        // 2. Drains, keyed plain plain keyed, twice; every item completed exactly once.
        const createLines = [
          ctx.line('create req/s ratio keyed/plain', creates.ratio, 'ratio', { text: `>= ${GOAL}`, ok: creates.ratio >= GOAL }),
          ctx.line('creates/s with keys', creates.a.reqPerSec, 'req/s'),
          ctx.line('creates/s without', creates.b.reqPerSec, 'req/s'),
          ctx.line('create p99 with keys', creates.a.latencyMs.p99, 'ms'),
          ctx.line('create p99 without', creates.b.latencyMs.p99, 'ms'),
        ];
        // The embedded store is held by the service: the drains, which seed between rounds, need PostgreSQL.
        if (!service.databaseUrl) return createLines;
        const db = openPostgres({ connectionString: service.databaseUrl, max: 2 });
        let batch = 0;
        const drained = await alternateDrains(ORDER, async (side) => {
          const ids = await seedActions(db, PER_ROUND, `IK${side === 'keyed' ? 'K' : 'P'}${++batch}`);
          const result = await drainQueue({ instances: [service.url], apiKey: API_KEY, queue: 'actions', workers: WORKERS, total: ids.length, deadlineMs: 300_000, idempotencyKeys: side === 'keyed' });
          const problems = exactlyOnceProblems(result, ids);
          if (problems.length) throw new Error(`${side} drain: ${problems.join('; ')}`);
          return drainedBy(result);
        }).finally(() => db.close());
        const drainRatio = drainRate(drained.keyed) / drainRate(drained.plain);
        const p99 = (side: 'keyed' | 'plain') => percentile(drained[side].claimLatencies, 0.99);
        ctx.log(`    drains: ${drainRate(drained.keyed).toFixed(0)} items/s with keys, ${drainRate(drained.plain).toFixed(0)} without; claim p99 ${p99('keyed').toFixed(1)} and ${p99('plain').toFixed(1)} ms`);
        return [
          ...createLines,
          ctx.line('drain items/s ratio keyed/plain', drainRatio, 'ratio', { text: `>= ${GOAL}`, ok: drainRatio >= GOAL }),
          ctx.line('drain claim p99 with keys', p99('keyed'), 'ms'),
          ctx.line('drain claim p99 without', p99('plain'), 'ms'),
        ];
      },
      { env: { DATABASE_POOL_SIZE: String(WORKERS) } },
    );
  },
};
