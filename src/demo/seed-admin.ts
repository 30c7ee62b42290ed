// The demo organisation's administration history, so the admin pages show something: a few months
// of admin audit rows (each with its event of the same name, as a real admin change writes) and a
// past health incident that recovered. The allowlist itself is seeded with the agents (seed.ts).
import type { Tx } from '../platform/db/types.js';
import type { SeedCounts } from './seed-counts.js';

const DIRECTOR = '100000000000000001';
const HEAD = '318640275119384062';

/** [action, actor, target, reason, before, after, days ago]. */
export const DEMO_ADMIN_HISTORY: readonly [string, string, string | null, string, unknown, unknown, number][] = [
  ['admin.access_granted', DIRECTOR, '100000000000000002', 'Joins the admin rota as trainer lead', null, { active: true }, 180],
  ['admin.access_granted', DIRECTOR, HEAD, 'Head Investigator covers night shifts', null, { active: true }, 150],
  ['admin.access_granted', DIRECTOR, '527381904416650238', 'Temporary cover during the summer event', null, { active: true }, 95],
  ['admin.agent_updated', DIRECTOR, '611047382295518804', 'Promotion board, cycle 3', { agent_rank: 'Agent', clearance_level: 2 }, { agent_rank: 'Senior Agent', clearance_level: 3 }, 80],
  ['admin.access_revoked', DIRECTOR, '527381904416650238', 'Summer event over', { active: true }, { active: false }, 60],
  ['admin.report_corrected', DIRECTOR, 'SVC-CASE-47930', 'Reporter name mistyped at intake', { reporter_name: 'quietstrom' }, { reporter_name: 'quietstorm' }, 21],
  ['admin.queue_requeued', HEAD, '1', 'Bot was restarted after the outage', { status: 'failed', attempts: 3 }, { status: 'pending', attempts: 0 }, 9],
  ['admin.queue_cancelled', HEAD, '7', 'Posted twice', { status: 'pending', attempts: 0 }, { status: 'cancelled', attempts: 0 }, 1],
];

async function seedAdminAudit(tx: Tx): Promise<SeedCounts> {
  const rows = DEMO_ADMIN_HISTORY.map(([action, actor, target, reason, before, after, days], i) => ({
    action, actor, target, reason, before, after, days, correlation_id: `demo-admin-${i + 1}`,
  }));
  const json = JSON.stringify(rows);
  const audit = await tx.query(
    `insert into audit_log (actor_kind, actor_chat_id, action, target, reason, before, after, correlation_id, created_at)
     select 'agent', actor, action, target, reason, before, after, correlation_id, now() - make_interval(days => days)
     from jsonb_to_recordset($1::jsonb) as x(action text, actor text, target text, reason text, before jsonb, after jsonb, days int, correlation_id text)`,
    [json],
  );
  await tx.query(
    `insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, before, after, data, correlation_id, created_at)
     select x.action, 'agent', x.actor, a.name, case when x.action = 'admin.report_corrected' then x.target end, x.before, x.after,
            jsonb_build_object('reason', x.reason, 'target', x.target), x.correlation_id, now() - make_interval(days => x.days)
     from jsonb_to_recordset($1::jsonb) as x(action text, actor text, target text, reason text, before jsonb, after jsonb, days int, correlation_id text)
     left join agents a on a.chat_id = x.actor`,
    [json],
  );
  return { audit_log: audit.rowCount };
}

/** A database slowdown two weeks ago: warn, then error, then back to ok. */
async function seedIncidents(tx: Tx): Promise<SeedCounts> {
  const { rowCount } = await tx.query(
    `insert into health_incidents (status_before, status_after, sections, correlation_id, created_at) values
       ('ok', 'warn', '{"actions": "warn"}', 'demo-health-1', now() - interval '14 days 2 hours'),
       ('warn', 'error', '{"actions": "warn", "database": "error"}', 'demo-health-2', now() - interval '14 days 1 hour 40 minutes'),
       ('error', 'ok', '{}', 'demo-health-3', now() - interval '14 days 1 hour')`,
  );
  return { health_incidents: rowCount };
}

export async function seedAdmin(tx: Tx): Promise<SeedCounts> {
  return { ...(await seedAdminAudit(tx)), ...(await seedIncidents(tx)) };
}
