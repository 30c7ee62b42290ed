// The health answer's figures as metrics (issue 20): the bot's two queues by status, the overall
// status last recorded and the incidents recorded, read per environment at each scrape; the
// realtime counts of this instance. A scrape must stay cheap at a million rows, so the queue
// counts are the health answer's own capped index probes (health-queries.ts), the status is the
// single health_state row, and the incidents are counted newest first along their index, capped
// the same way. Succeeded and cancelled items are history, not queue: they are not counted.
import type { Metrics, Sample } from '../platform/metrics.js';
import type { Queryable } from '../platform/db/types.js';
import { HEALTH_COUNT_CAP, type RealtimeStats } from './health-checks.js';
import type { HealthStatus } from './health-schemas.js';

export const QUEUES = { actions: 'report_actions', deliveries: 'discipline_deliveries' } as const;
export const COUNTED_STATUSES = ['pending', 'processing', 'failed'] as const;
/** The overall status as a number, for alerting on `> 0`. */
export const HEALTH_STATUS_VALUE: Record<HealthStatus, number> = { ok: 0, warn: 1, error: 2 };

const capped = (from: string) => `(select count(*) from (select from ${from} limit $1::int) c)::int`;
const queueCounts = Object.entries(QUEUES).flatMap(([queue, table]) =>
  COUNTED_STATUSES.map((status) => `${capped(`${table} where status = '${status}'`)} as ${queue}_${status}`),
);

// Each count walks a partial index (pending, processing) or the status index (failed) and stops
// at the cap; health_state is one row by construction (check (id)).
export const METRICS_READ_SQL = `
select ${queueCounts.join(',\n  ')},
  s.status as health_status,
  extract(epoch from s.changed_at)::float8 as health_changed_at,
  (select count(*) from (select from health_incidents order by created_at desc, id desc limit $1::int) c)::int as health_incidents
from health_state s
where s.id`;

type MetricsRow = Record<string, number> & { health_status: HealthStatus };

/** The metrics this registered with: the health routes may be registered twice (the tests do), their series once. */
const registered = new WeakSet<Metrics>();

export function registerHealthMetrics(metrics: Metrics, realtime: (() => RealtimeStats) | undefined): void {
  if (registered.has(metrics)) return;
  registered.add(metrics);
  const items = metrics.gauge('cms_queue_items', `Items of the bot's queues by status, per environment (pending, processing, failed; each count stops at ${HEALTH_COUNT_CAP})`, ['environment', 'queue', 'status']);
  const status = metrics.gauge('cms_health_status', 'Overall status last recorded by GET /admin/health, per environment: 0 ok, 1 warn, 2 error', ['environment']);
  const changed = metrics.gauge('cms_health_status_changed_timestamp_seconds', 'When the recorded overall status last changed (Unix time), per environment', ['environment']);
  const incidents = metrics.gauge('cms_health_incidents', `Incidents recorded in the health history, per environment (stops at ${HEALTH_COUNT_CAP})`, ['environment']);

  metrics.readDatabases(async (db: Queryable): Promise<Sample[]> => {
    const { rows } = await db.query<MetricsRow>(METRICS_READ_SQL, [HEALTH_COUNT_CAP], { name: 'metrics_read' });
    const row = rows[0];
    if (!row) return [];
    const samples: Sample[] = Object.keys(QUEUES).flatMap((queue) =>
      COUNTED_STATUSES.map((s) => ({ gauge: items, labels: { queue, status: s }, value: row[`${queue}_${s}`]! })),
    );
    samples.push({ gauge: status, value: HEALTH_STATUS_VALUE[row.health_status] }, { gauge: changed, value: row.health_changed_at! }, { gauge: incidents, value: row.health_incidents! });
    return samples;
  });

  if (!realtime) return;
  metrics.gauge('cms_realtime_connections', 'Realtime WebSocket connections open on this instance', [], (g) => g.set(realtime().connections));
  metrics.gauge('cms_realtime_channels', 'Realtime channels joined on this instance', [], (g) => g.set(realtime().channels));
  metrics.counterFrom('cms_realtime_deliveries_total', 'Broadcasts delivered to subscribers by this instance', () => realtime().delivered);
  metrics.counterFrom('cms_realtime_refused_joins_total', 'Channel joins refused by this instance (bad token, not a member)', () => realtime().refused_joins);
  metrics.counterFrom('cms_realtime_dropped_frames_total', 'Client frames dropped by this instance (rate limit, malformed)', () => realtime().dropped_frames);
  metrics.counterFrom('cms_realtime_slow_skips_total', 'Broadcasts skipped for subscribers too far behind', () => realtime().slow_skips);
  metrics.counterFrom('cms_realtime_broadcast_failures_total', 'Training broadcasts that could not be sent by this instance', () => realtime().broadcast_failures);
}
