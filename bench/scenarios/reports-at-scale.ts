// The dashboard's lists at scale: 1,000,000 reports and 1,000,000 events on PostgreSQL (100,000
// each on PGlite), then the paginated report list and a text search of the audit log under 50
// connections. Index use is shown from PostgreSQL's own counters: during the load the tables are
// read through their indexes, never scanned whole.
import pg from 'pg';
import { generateReportsAndEvents } from '../lib/generate-data.js';
import { withOwnService } from '../lib/own-service.js';
import { API_KEY } from '../lib/service.js';
import type { ResultLine, Scenario } from '../types.js';

const LIST_P99_GOAL_MS = 25;
const AUDIT_P95_GOAL_MS = 100;

interface ScanCounts {
  [table: string]: { seq: number; idx: number };
}

async function scanCounts(url: string): Promise<ScanCounts> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ relname: string; seq_scan: string; idx_scan: string | null }>(
      `select relname, seq_scan, idx_scan from pg_stat_user_tables where relname in ('reports', 'events', 'contact_threads')`,
    );
    return Object.fromEntries(rows.map((r) => [r.relname, { seq: Number(r.seq_scan), idx: Number(r.idx_scan ?? 0) }]));
  } finally {
    await client.end();
  }
}

export const reportsAtScale: Scenario = {
  name: 'reports-at-scale',
  description: 'GET /reports (paginated) and GET /audit (text search) over 1M reports + 1M events (PostgreSQL; 100k on PGlite)',
  needs: [],
  async run(ctx) {
    const rows = ctx.store === 'postgres' ? 1_000_000 : 100_000;
    const started = Date.now();
    return withOwnService(
      ctx,
      (db) => generateReportsAndEvents(db, { reports: rows, events: rows }),
      async (service) => {
        ctx.log(`    generated ${rows.toLocaleString('en')} reports and ${rows.toLocaleString('en')} events in ${((Date.now() - started) / 1000).toFixed(0)} s`);
        const headers = { authorization: API_KEY };
        const before = service.databaseUrl ? await scanCounts(service.databaseUrl) : undefined;
        const list = await ctx.measure({ url: `${service.url}/reports?limit=50&offset=0`, headers, label: 'GET /reports?limit=50' });
        const filtered = await ctx.measure({
          url: `${service.url}/reports?limit=50&offset=500&statuses=Open,Pending&type=operator&sort=updated`,
          headers,
          label: 'GET /reports filtered, page 11',
        });
        // A case id is what staff type into the audit search; a phrase shared by thousands of events
        // is the broad case, reported beside it.
        const audit = await ctx.measure({ url: `${service.url}/audit?search=bench-00004242&limit=50`, headers, label: 'GET /audit?search=<case id>' });
        const broad = await ctx.measure({ url: `${service.url}/audit?search=footage%20batch%2042&limit=50`, headers, label: 'GET /audit?search=<broad phrase>' });
        // The goals are PostgreSQL's (1M rows); PGlite, one single-threaded process, records the same
        // figures for 100k rows.
        const onPg = ctx.store === 'postgres';
        const lines: ResultLine[] = [
          ctx.line('GET /reports first page p99', list.latencyMs.p99, 'ms', onPg ? { text: `< ${LIST_P99_GOAL_MS} ms`, ok: list.latencyMs.p99 < LIST_P99_GOAL_MS } : undefined),
          ctx.line('GET /reports first page req/s', list.reqPerSec, 'req/s'),
          ctx.line('GET /reports filtered page 11 p99', filtered.latencyMs.p99, 'ms'),
          ctx.line('GET /audit text search p95', audit.latencyMs.p95, 'ms', onPg ? { text: `< ${AUDIT_P95_GOAL_MS} ms`, ok: audit.latencyMs.p95 < AUDIT_P95_GOAL_MS } : undefined),
          ctx.line('GET /audit text search req/s', audit.reqPerSec, 'req/s'),
          ctx.line('GET /audit broad search (1 event in 90 matches) p95', broad.latencyMs.p95, 'ms'),
        ];
        if (service.databaseUrl && before) {
          const after = await scanCounts(service.databaseUrl);
          for (const table of ['reports', 'events'] as const) {
            const seq = (after[table]?.seq ?? 0) - (before[table]?.seq ?? 0);
            const idx = (after[table]?.idx ?? 0) - (before[table]?.idx ?? 0);
            ctx.log(`    ${table}: ${idx} index scans, ${seq} sequential scans during the load`);
            lines.push(ctx.line(`${table} sequential scans during the load`, seq, 'scans', { text: '= 0', ok: seq === 0 }));
          }
        }
        return lines;
      },
    );
  },
};
