// GET /admin/health at scale (issue 9): the shared at-scale store (1,000,000 reports and events on
// PostgreSQL, 100,000 on PGlite) plus a queue history (200,000 completed report actions, 100,000
// completed deliveries, a few pending and processing, three failed actions: a steady warn), an
// allowlisted Director bootstrapped in SQL as `npm run cli -- bootstrap` would, signed in through
// the real OAuth flow. Health by that session under 50 connections, side by side with GET /auth/me
// by the same session (the lightest session route), and PostgreSQL's own counters: reports and
// events are never scanned whole.
import { countersNow, scanDelta, STATS_FLUSH_MS } from '../lib/pg-counters.js';
import { admin } from '../lib/pg.js';
import { HEALTH_COUNT_CAP } from '../../src/admin/health-checks.js';
import { ADMIN_EVENT_TYPES, HEALTH_READ_SQL } from '../../src/admin/health-queries.js';
import type { Db } from '../../src/platform/db/types.js';
import { withAtScaleService } from '../lib/at-scale.js';
import { formatComparison } from '../lib/report.js';
import { browserSignIn } from '../lib/sign-in.js';
import type { ResultLine, Scenario } from '../types.js';

const P99_GOAL_MS = 50;
const DIRECTOR = '300000000000000900';
const TABLES = ['reports', 'events', 'report_actions', 'discipline_deliveries'] as const;

/** Scans of TABLES, and of health_state: one per health computation (its compare-and-set). */
const scanCounts = (url: string) => countersNow(url, [...TABLES, 'health_state']);

/** The health read's plan: its execution time and every scan node, as "<node> on <relation> [<index>]". */
async function explainRead(url: string): Promise<{ ms: number; scans: string[] }> {
  return admin(url, async (c) => {
    const { rows } = await c.query<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }>(
      `explain (analyze, format json) ${HEALTH_READ_SQL}`,
      [HEALTH_COUNT_CAP, ADMIN_EVENT_TYPES],
    );
    const [plan] = rows[0]!['QUERY PLAN'];
    const scans: string[] = [];
    const walk = (node: PlanNode) => {
      if (node['Relation Name']) scans.push(`${node['Node Type']} on ${node['Relation Name']}${node['Index Name'] ? ` [${node['Index Name']}]` : ''}`);
      node.Plans?.forEach(walk);
    };
    walk(plan.Plan);
    return { ms: plan['Execution Time'], scans };
  });
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** The Director (bootstrap's SQL), and a queue history of a busy deployment, once per store. */
async function prepare(db: Db, rows: number): Promise<void> {
  await db.query(
    `insert into agents (chat_id, name, status, agent_rank, clearance_level) values ($1::text, 'Bench Director', 'active', 'Director', 5)
     on conflict (chat_id) do update set status = 'active', agent_rank = 'Director', clearance_level = 5`,
    [DIRECTOR],
  );
  await db.query(
    `insert into admin_allowlist (chat_id, active, granted_by) values ($1::text, true, 'operator') on conflict (chat_id) do update set active = true`,
    [DIRECTOR],
  );
  const { rows: existing } = await db.query<{ n: number }>('select count(*)::int as n from report_actions');
  if (existing[0]!.n > 0) return;
  const history = Math.round(rows / 5);
  await db.query(
    `insert into report_actions (report_id, kind, queue, status, attempts, claimed_at, completed_at, created_at, updated_at)
     select 'BENCH-' || lpad((1 + g % $2::int)::text, 8, '0'), 'claim', case when g % 10 = 0 then 'supervisor' else 'operator' end,
            case when g <= 3 then 'failed' when g <= 23 then 'pending' when g <= 28 then 'processing' else 'success' end,
            1, now() - make_interval(secs => g), case when g <= 3 or g > 28 then now() - make_interval(secs => g) end,
            now() - make_interval(secs => g + 5), now() - make_interval(secs => g)
     from generate_series(1, $1::int) g`,
    [history, rows],
  );
  await db.query(
    `insert into discipline_deliveries (kind, user_id, status, attempts, claimed_at, completed_at, available_at, created_at)
     select 'user_lookup', (500000000000000000 + g)::text, case when g <= 10 then 'pending' else 'success' end, case when g <= 10 then 0 else 1 end,
            case when g > 10 then now() - make_interval(secs => g) end, case when g > 10 then now() - make_interval(secs => g) end,
            now() - make_interval(secs => g), now() - make_interval(secs => g)
     from generate_series(1, $1::int) g`,
    [Math.round(history / 2)],
  );
  await db.query(
    `insert into report_evidence (report_id, description, url, created_at)
     select 'BENCH-' || lpad(g::text, 8, '0'), 'Clip', 'https://clips.example.test/' || g, now() - make_interval(secs => g * 60) from generate_series(1, 10000) g`,
  );
  await db.query(
    `insert into audit_log (actor_kind, actor_chat_id, action, target, reason, correlation_id, created_at)
     select 'agent', $1::text, 'punishment.issued', 'P' || g, 'Bench', 'bench-audit-' || g, now() - make_interval(secs => g * 60) from generate_series(1, 10000) g`,
    [DIRECTOR],
  );
  for (const table of ['report_actions', 'discipline_deliveries', 'report_evidence', 'audit_log']) await db.exec(`vacuum analyze ${table}`);
}

export const adminHealth: Scenario = {
  name: 'admin-health',
  description: 'GET /admin/health by an allowlisted Director over 1M reports + 1M events (PostgreSQL; 100k on PGlite) vs GET /auth/me',
  needs: [],
  async run(ctx) {
    // Realtime configured too: the status is the steady warn of the three failed actions.
    const env = {
      PRODUCTION_REALTIME_SIGNING_SECRET: 'bench-realtime-signing-secret-0123456789abcdef',
      PRODUCTION_REALTIME_URL: 'http://realtime.bench.localhost',
      PRODUCTION_REALTIME_ANON_KEY: 'bench-anon-key',
    };
    return withAtScaleService(ctx, prepare, async (service) => {
      const cookie = await browserSignIn(service.url, DIRECTOR);
      const headers = { cookie };
      const sample = await fetch(`${service.url}/admin/health`, { headers });
      const body = (await sample.json()) as Record<string, { status: string; [k: string]: unknown }>;
      if (sample.status !== 200) throw new Error(`GET /admin/health answered ${sample.status}: ${JSON.stringify(body)}`);
      ctx.log(`    sample answer: overall ${body.overall!.status} ${JSON.stringify(body.overall!.sections)}, database ${JSON.stringify(body.database)}`);
      ctx.log(`    actions ${JSON.stringify(body.actions)}; queue ${JSON.stringify(body.queue)}`);

      const url = service.databaseUrl;
      const plan = url ? await explainRead(url) : undefined;
      if (plan) ctx.log(`    health read: ${plan.ms.toFixed(2)} ms (EXPLAIN ANALYZE); scans: ${plan.scans.join(', ')}`);
      const before = url ? await scanCounts(url) : undefined;

      const c = await ctx.compare(
        { url: `${service.url}/admin/health`, headers, label: 'GET /admin/health (Director session)' },
        { url: `${service.url}/auth/me`, headers, label: 'GET /auth/me (same session)' },
      );
      ctx.log(formatComparison(c));
      const onPg = ctx.store === 'postgres';
      const lines: ResultLine[] = [
        ctx.line('GET /admin/health p99', c.a.latencyMs.p99, 'ms', onPg ? { text: `< ${P99_GOAL_MS} ms`, ok: c.a.latencyMs.p99 < P99_GOAL_MS } : undefined),
        ctx.line('GET /admin/health p50', c.a.latencyMs.p50, 'ms'),
        ctx.line('GET /admin/health req/s', c.a.reqPerSec, 'req/s'),
        ctx.line('GET /auth/me p99 (same session)', c.b.latencyMs.p99, 'ms'),
        ctx.line('GET /auth/me req/s', c.b.reqPerSec, 'req/s'),
        ctx.line('req/s ratio health / auth-me', c.ratio, 'ratio'),
      ];
      if (plan) lines.push(ctx.line('health read alone (EXPLAIN ANALYZE)', plan.ms, 'ms'));
      if (url && before) {
        await new Promise((resolve) => setTimeout(resolve, STATS_FLUSH_MS));
        const after = await scanCounts(url);
        const incidents = await admin(url, async (client) => (await client.query<{ n: number }>('select count(*)::int as n from health_incidents')).rows[0]!.n);
        const state = scanDelta(before, after, 'health_state');
        const computations = state.seq + state.idx;
        ctx.log(`    sequential scans during the load: ${TABLES.map((t) => `${t} ${scanDelta(before, after, t).seq}`).join(', ')}; health incidents recorded: ${incidents}`);
        ctx.log(`    health computations during the load (warm-up included): ${computations}, for ${c.a.total} measured answers (concurrent requests share one)`);
        lines.push(ctx.line('health computations during the load, warm-up included', computations, 'computations'));
        for (const table of ['reports', 'events'] as const) {
          const { seq } = scanDelta(before, after, table);
          lines.push(ctx.line(`${table} sequential scans during the load`, seq, 'scans', { text: '= 0', ok: seq === 0 }));
        }
      }
      return lines;
    }, { env });
  },
};
