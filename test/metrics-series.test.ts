// Metrics (issue 20): the series read at scrape time. The bot's queues by status match the rows;
// the health status and incidents match what GET /admin/health recorded; the realtime figures
// match the health answer's; the database pools, transaction times and failures by kind.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HEALTH_STATUS_VALUE } from '../src/admin/metrics.js';
import { admin } from './helpers/admin.js';
import { clearQueues, health, makeAction, makeReport } from './helpers/admin-health.js';
import { signedIn, type Person } from './helpers/identity.js';
import { createMetricsTestApp, histogram, scrape, value, type MetricsTestApp } from './helpers/metrics.js';
import { SECRETS, token } from './helpers/realtime.js';
import { onPostgres } from './helpers/stores.js';

let t: MetricsTestApp;
let director: Person;
beforeAll(async () => {
  t = await createMetricsTestApp({ env: SECRETS });
  director = await admin(t);
});
afterAll(() => t.close());

describe("the bot's queues", () => {
  beforeEach(() => clearQueues(t.db.production));

  it('counts the items of each queue by status as the rows are (succeeded and cancelled are history, not counted)', async () => {
    const db = t.db.production;
    const report = await makeReport(db);
    for (const status of ['pending', 'pending', 'processing', 'failed', 'failed', 'failed', 'success', 'cancelled']) await makeAction(db, report, status);
    for (const [user, status] of [['1', 'pending'], ['2', 'failed'], ['3', 'success']]) {
      await db.query(`insert into discipline_deliveries (kind, user_id, status, attempts) values ('user_lookup', $1::text, $2::text, 1)`, [`${process.pid}${user}`, status]);
    }
    const families = await scrape(t.metricsUrl);
    const items = (environment: string, queue: string, status: string) => value(families, 'cms_queue_items', { environment, queue, status });
    expect(['pending', 'processing', 'failed'].map((s) => items('production', 'actions', s))).toEqual([2, 1, 3]);
    expect(['pending', 'processing', 'failed'].map((s) => items('production', 'deliveries', s))).toEqual([1, 0, 1]);
    expect(families.get('cms_queue_items')!.samples.some((s) => ['success', 'cancelled'].includes(s.labels.status!))).toBe(false);

    // The demo environment's seeded queues, against a count of its rows.
    const { rows } = await t.db.demo.query<{ queue: string; status: string; n: number }>(
      `select 'actions' as queue, status, count(*)::int as n from report_actions group by status
       union all select 'deliveries', status, count(*)::int from discipline_deliveries group by status`,
    );
    for (const queue of ['actions', 'deliveries']) {
      for (const status of ['pending', 'processing', 'failed']) {
        expect([queue, status, items('demo', queue, status)]).toEqual([queue, status, rows.find((r) => r.queue === queue && r.status === status)?.n ?? 0]);
      }
    }
  });
});

describe('the health answer', () => {
  beforeEach(() => clearQueues(t.db.production));

  it('exposes the overall status last recorded, when it changed, and the incidents recorded', async () => {
    const db = t.db.production;
    await db.query('delete from health_incidents');
    await db.query(`update health_state set status = 'error', previous_status = 'ok', changed_at = '2026-01-02T03:04:05Z'`);
    await db.query(`insert into health_incidents (status_before, status_after, correlation_id, created_at) values ('ok', 'error', 'metrics-test', '2026-01-02T03:04:05Z')`);
    let families = await scrape(t.metricsUrl);
    expect(value(families, 'cms_health_status', { environment: 'production' })).toBe(2);
    expect(value(families, 'cms_health_status_changed_timestamp_seconds', { environment: 'production' })).toBe(Date.parse('2026-01-02T03:04:05Z') / 1000);
    expect(value(families, 'cms_health_incidents', { environment: 'production' })).toBe(1);

    // GET /admin/health records the status it finds; the gauges follow what it recorded.
    const { res, body } = await health(t, director);
    expect(res.statusCode).toBe(200);
    const { rows } = await db.query<{ status: 'ok' | 'warn' | 'error'; n: number }>('select status, (select count(*)::int from health_incidents) as n from health_state');
    expect(rows[0]!.status).toBe(body.overall.status);
    // One more incident when the status it found is not the error recorded before.
    expect(rows[0]!.n).toBe(body.overall.status === 'error' ? 1 : 2);
    families = await scrape(t.metricsUrl);
    expect(value(families, 'cms_health_status', { environment: 'production' })).toBe(HEALTH_STATUS_VALUE[rows[0]!.status]);
    expect(value(families, 'cms_health_incidents', { environment: 'production' })).toBe(rows[0]!.n);
  });
});

describe('realtime', () => {
  it("exposes this instance's hub figures, the same as the health answer's", async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    const ws = new WebSocket(`ws://127.0.0.1:${port}/realtime/v1/websocket?apikey=x&vsn=2.0.0`, { headers: { host: 'localhost' } });
    const replies: unknown[][] = [];
    ws.on('message', (data: Buffer) => replies.push(JSON.parse(data.toString()) as unknown[]));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const trainee = await signedIn(t);
    const join = (ref: string, topic: string, accessToken: string | undefined) =>
      ws.send(JSON.stringify([ref, ref, `realtime:${topic}`, 'phx_join', { config: { private: true }, access_token: accessToken }]));
    join('1', `training:user:${trainee.agent.chat_id}`, await token(t, trainee));
    join('2', `training:user:${trainee.agent.chat_id}`, 'not-a-token');
    await expect.poll(() => replies.filter((r) => r[3] === 'phx_reply').length).toBe(2);

    const families = await scrape(t.metricsUrl);
    const { body } = await health(t, director);
    const hub = body.api.realtime as Record<string, number>;
    expect(hub).toMatchObject({ connections: 1, channels: 1, refused_joins: 1 });
    const figures: [string, number][] = [
      ['cms_realtime_connections', hub.connections!],
      ['cms_realtime_channels', hub.channels!],
      ['cms_realtime_deliveries_total', hub.delivered!],
      ['cms_realtime_refused_joins_total', hub.refused_joins!],
      ['cms_realtime_dropped_frames_total', hub.dropped_frames!],
      ['cms_realtime_broadcast_failures_total', hub.broadcast_failures!],
    ];
    for (const [name, expected] of figures) expect([name, value(families, name)]).toEqual([name, expected]);
    ws.close();
    await expect.poll(async () => value(await scrape(t.metricsUrl), 'cms_realtime_connections')).toBe(0);
  });
});

describe('the databases', () => {
  it('exposes each environment pool at rest, and the waiting calls while it is busy', async () => {
    let families = await scrape(t.metricsUrl);
    for (const environment of ['production', 'demo']) {
      const size = value(families, 'cms_db_pool_size', { environment })!;
      if (onPostgres) expect(size).toBeGreaterThanOrEqual(1);
      else expect(size).toBe(1);
      expect(value(families, 'cms_db_pool_idle', { environment })).toBe(size);
      expect(value(families, 'cms_db_pool_waiting', { environment })).toBe(0);
    }
    // Every connection of the production pool held by a transaction, and one more call waiting.
    const db = t.environments.get('production')!.db;
    const held = onPostgres ? 5 : 1;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const holders = Array.from({ length: held }, () => db.transaction(async (tx) => { await tx.query('select 1'); await gate; }));
    await expect.poll(() => db.poolStats().idle).toBe(0);
    const waiter = db.query('select 1');
    const failuresBefore = value(families, 'cms_metrics_database_read_failures_total', { environment: 'production' }) ?? 0;
    families = await scrape(t.metricsUrl);
    // The scrape's own read waits too, past its deadline: that environment's read series are absent.
    expect(value(families, 'cms_db_pool_size', { environment: 'production' })).toBe(held);
    expect(value(families, 'cms_db_pool_idle', { environment: 'production' })).toBe(0);
    expect(value(families, 'cms_db_pool_waiting', { environment: 'production' })).toBe(2);
    expect(value(families, 'cms_metrics_database_read_failures_total', { environment: 'production' })).toBe(failuresBefore + 1);
    expect(value(families, 'cms_queue_items', { environment: 'production', queue: 'actions', status: 'pending' })).toBeUndefined();
    expect(value(families, 'cms_queue_items', { environment: 'demo', queue: 'actions', status: 'pending' })).toBeDefined();
    release();
    await Promise.all([...holders, waiter]);
  });

  it('times every transaction per environment', async () => {
    const before = histogram(await scrape(t.metricsUrl), 'cms_db_transaction_duration_seconds', { environment: 'demo' }) ?? { count: 0, sum: 0, inf: 0 };
    const db = t.environments.get('demo')!.db;
    await db.transaction((tx) => tx.query('select 1'));
    await db.transaction((tx) => tx.query('select pg_sleep(0.05)'));
    const after = histogram(await scrape(t.metricsUrl), 'cms_db_transaction_duration_seconds', { environment: 'demo' })!;
    expect([after.count - before.count, after.inf - before.inf]).toEqual([2, 2]);
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(0.05);
  });

  it('counts failures by kind: zero at rest; a statement timeout and a lost connection (PostgreSQL: PGlite has neither)', async () => {
    const errors = async (kind: string) => value(await scrape(t.metricsUrl), 'cms_db_errors_total', { environment: 'production', kind });
    const [timeouts, unavailable] = [await errors('timeout'), await errors('unavailable')];
    expect([timeouts, unavailable].every((n) => n !== undefined && n >= 0)).toBe(true);
    if (!onPostgres) return;
    const db = t.environments.get('production')!.db;
    await expect(db.transaction(async (tx) => {
      await tx.query(`set local statement_timeout = '20ms'`);
      await tx.query('select pg_sleep(1)');
    })).rejects.toMatchObject({ code: '57014' });
    await expect(db.query('select pg_terminate_backend(pg_backend_pid())')).rejects.toMatchObject({ code: '57P01' });
    expect([await errors('timeout'), await errors('unavailable')]).toEqual([timeouts! + 1, unavailable! + 1]);
  });
});
