// Report creation over HTTP (validation, one transaction of report + timeline + event, the full
// report read back and serialised) vs the same inserts in a raw loop through the same driver, with
// the same concurrency, in the same run.
import { migrate } from '../../src/platform/db/migrate.js';
import { openPglite } from '../../src/platform/db/pglite.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { createLoad, REPORT, reportBody } from '../lib/create-report.js';
import { withOwnService } from '../lib/own-service.js';
import { runLoop } from '../lib/raw-loop.js';
import type { Scenario } from '../types.js';

const GOAL = 0.4;

/** The inserts POST /reports/create makes for REPORT, as one transaction straight through the driver. */
async function rawCreate(db: Db, i: number): Promise<void> {
  const id = `RAW-${process.pid}-${i}`;
  const r = REPORT;
  await db.transaction(async (tx) => {
    await tx.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name)
       values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text) returning *`,
      [id, r.reporter, r.reported, r.reason, r.notes, r.evidence, r.reporter_name, r.reported_name],
    );
    await tx.query(`insert into report_timeline (report_id, event, actor_kind, actor_name) values ($1::text, 'Report created', 'bot', 'Automation bot')`, [id]);
    await tx.query(
      `insert into events (type, actor_kind, report_id, after, correlation_id) values ('report.created', 'bot', $1::text, $2::jsonb, $3::text)`,
      [id, JSON.stringify({ report_id: id }), `raw-${i}`],
    );
  });
}

export const reportCreate: Scenario = {
  name: 'report-create',
  description: 'POST /reports/create over HTTP vs a raw loop of the same inserts through the same driver (goal on PostgreSQL)',
  needs: [],
  async run(ctx) {
    return withOwnService(ctx, async (service) => {
      const http = await ctx.measure(createLoad(service.url, reportBody('HTTP-[<id>]'), 'service POST /reports/create'));
      // PostgreSQL: the same database, a pool the size of the service's. PGlite: the service holds
      // its folder, so the loop runs on an in-memory PGlite of its own (same driver, same SQL).
      const db = service.databaseUrl ? openPostgres({ connectionString: service.databaseUrl, max: 10 }) : await openPglite();
      try {
        if (!service.databaseUrl) await migrate(db);
        const raw = await runLoop(ctx.options.connections, ctx.options.duration, (i) => rawCreate(db, i));
        if (raw.errors > 0) throw new Error(`raw loop: ${raw.errors} failed transactions`);
        const ratio = ctx.ratio(http.reqPerSec, raw.opsPerSec);
        ctx.log(`    raw loop: ${raw.opsPerSec.toFixed(0)} tx/s (${raw.total} tx), p50=${raw.latencyMs.p50.toFixed(1)} ms p99=${raw.latencyMs.p99.toFixed(1)} ms`);
        ctx.log(`    ratio ${ratio.toFixed(2)}`);
        const goal = ctx.store === 'postgres' ? { text: `>= ${GOAL}`, ok: ratio >= GOAL } : undefined;
        return [
          ctx.line('req/s ratio HTTP/raw', ratio, 'ratio', goal),
          ctx.line('HTTP creates/s', http.reqPerSec, 'req/s'),
          ctx.line('raw creates/s', raw.opsPerSec, 'req/s'),
          ctx.line('HTTP p99 latency', http.latencyMs.p99, 'ms'),
        ];
      } finally {
        await db.close();
      }
    });
  },
};
