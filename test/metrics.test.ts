// Metrics (issue 20): the METRICS_PORT listener serves GET /metrics and nothing else; the public
// port never serves it; requests are counted and timed by route pattern (unknown paths under one
// label), status class and environment; the exposition parses as Prometheus text and carries the
// process's default metrics. The series read from the stores and the hub: metrics-series.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_KEY, PRODUCTION_KEY } from './helpers/app.js';
import { createMetricsTestApp, histogram, labelValues, parse, scrape, value, type MetricsTestApp } from './helpers/metrics.js';
import { chatId } from './helpers/identity.js';
import { DURATION_BUCKETS, requestSeries } from '../src/platform/http/request-metrics.js';
import { Metrics } from '../src/platform/metrics.js';

let t: MetricsTestApp;
beforeAll(async () => {
  t = await createMetricsTestApp();
});
afterAll(() => t.close());

const REQUESTS = 'cms_http_requests_total';
const DURATIONS = 'cms_http_request_duration_seconds';

async function createAgent(id: string, headers = { authorization: PRODUCTION_KEY }) {
  const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers, payload: { chat_id: id, name: 'Metrics Agent' } });
  expect(res.statusCode).toBe(201);
}

describe('requests', () => {
  it('counts three requests to a route under its pattern, timed in the histogram, by status class and environment', async () => {
    const ids = [chatId(), chatId(), chatId()];
    for (const id of ids) await createAgent(id);
    const before = await scrape(t.metricsUrl);
    const labels = { environment: 'production', method: 'GET', route: '/agents/:chat_id', status_class: '2xx' };
    for (const id of ids) {
      const res = await t.app.inject({ url: `/agents/${id}`, headers: { authorization: PRODUCTION_KEY } });
      expect([res.statusCode, res.json().agent.chat_id]).toEqual([200, id]);
    }
    // A handler's own 404 keeps its route pattern: only paths that match no route are unmatched.
    const missing = await t.app.inject({ url: `/agents/${chatId()}`, headers: { authorization: PRODUCTION_KEY } });
    expect(missing.statusCode).toBe(404);
    const after = await scrape(t.metricsUrl);

    expect((value(after, REQUESTS, labels) ?? 0) - (value(before, REQUESTS, labels) ?? 0)).toBe(3);
    const notFound = { ...labels, status_class: '4xx' };
    expect((value(after, REQUESTS, notFound) ?? 0) - (value(before, REQUESTS, notFound) ?? 0)).toBe(1);
    const timed = histogram(after, DURATIONS, labels)!;
    const timedBefore = histogram(before, DURATIONS, labels) ?? { count: 0, sum: 0, inf: 0 };
    expect([timed.count - timedBefore.count, timed.inf - timedBefore.inf]).toEqual([3, 3]);
    expect(timed.sum).toBeGreaterThan(timedBefore.sum);
    // The ids never became label values.
    for (const id of ids) expect(labelValues(after, REQUESTS, 'route').join(' ')).not.toContain(id);
  });

  it('counts paths that match no route under the one label "unmatched", never the raw URL', async () => {
    const labels = { environment: 'production', method: 'GET', route: 'unmatched', status_class: '4xx' };
    const before = await scrape(t.metricsUrl);
    const paths = [`/no-such-${chatId()}`, `/reports/x/y/z/${chatId()}`];
    for (const url of paths) expect((await t.app.inject({ url, headers: { authorization: PRODUCTION_KEY } })).statusCode).toBe(404);
    const after = await scrape(t.metricsUrl);
    expect((value(after, REQUESTS, labels) ?? 0) - (value(before, REQUESTS, labels) ?? 0)).toBe(2);
    const routes = labelValues(after, REQUESTS, 'route');
    for (const url of paths) expect(routes).not.toContain(url);
    expect(routes.every((r) => r === 'unmatched' || r.startsWith('/'))).toBe(true);
  });

  it('labels each environment by its host, and requests outside any environment as "none"', async () => {
    const before = await scrape(t.metricsUrl);
    const id = chatId();
    await createAgent(id, { authorization: DEMO_KEY, host: 'demo.localhost' } as never);
    expect((await t.app.inject({ url: '/', headers: { host: 'nowhere.example' } })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/agents', headers: { host: 'nowhere.example', authorization: PRODUCTION_KEY } })).statusCode).toBe(421);
    const after = await scrape(t.metricsUrl);
    const delta = (labels: Record<string, string>) => (value(after, REQUESTS, labels) ?? 0) - (value(before, REQUESTS, labels) ?? 0);
    expect(delta({ environment: 'demo', method: 'POST', route: '/agents/create', status_class: '2xx' })).toBe(1);
    expect(delta({ environment: 'none', method: 'GET', route: '/', status_class: '2xx' })).toBe(1);
    expect(delta({ environment: 'none', method: 'GET', route: '/agents', status_class: '4xx' })).toBe(1);
    const { rows } = await t.db.demo.query('select count(*)::int as n from agents where chat_id = $1::text', [id]);
    expect(rows[0]!.n).toBe(1);
  });
});

describe('the listeners', () => {
  it('the public port does not serve /metrics: 404 on an environment host, 421 on an unknown one', async () => {
    for (const host of ['localhost', 'demo.localhost']) {
      const res = await t.app.inject({ url: '/metrics', headers: { host } });
      expect([res.statusCode, res.json()]).toEqual([404, { success: false, error: 'Route GET /metrics not found', code: 'NOT_FOUND' }]);
    }
    const unknown = await t.app.inject({ url: '/metrics', headers: { host: 'metrics.example' } });
    expect([unknown.statusCode, unknown.json().code]).toEqual([421, 'UNKNOWN_HOST']);
    expect(unknown.body).not.toContain('cms_');
  });

  it('the metrics port serves GET /metrics for any host and nothing else', async () => {
    for (const host of ['localhost', 'demo.localhost', 'anything.example']) {
      const res = await fetch(`${t.metricsUrl}/metrics`, { headers: { host } });
      expect(res.status).toBe(200);
      expect(parse(await res.text()).has(REQUESTS)).toBe(true);
    }
    const others: [string, string][] = [['GET', '/'], ['GET', '/agents'], ['GET', '/docs'], ['GET', '/admin/health'], ['GET', '/metrics/x'], ['POST', '/metrics'], ['DELETE', '/metrics']];
    for (const [method, path] of others) {
      const res = await fetch(`${t.metricsUrl}${path}`, { method, headers: { authorization: PRODUCTION_KEY } });
      expect([method, path, res.status, await res.json()]).toEqual([method, path, 404, { success: false, error: `Route ${method} ${path} not found`, code: 'NOT_FOUND' }]);
    }
  });
});

describe('the exposition', () => {
  it('parses as Prometheus text with every family of the service and the default process metrics', async () => {
    const families = await scrape(t.metricsUrl);
    const expected: [string, string][] = [
      [REQUESTS, 'counter'],
      [DURATIONS, 'histogram'],
      ['cms_db_pool_size', 'gauge'],
      ['cms_db_pool_idle', 'gauge'],
      ['cms_db_pool_waiting', 'gauge'],
      ['cms_db_transaction_duration_seconds', 'histogram'],
      ['cms_db_errors_total', 'counter'],
      ['cms_queue_items', 'gauge'],
      ['cms_health_status', 'gauge'],
      ['cms_health_status_changed_timestamp_seconds', 'gauge'],
      ['cms_health_incidents', 'gauge'],
      ['cms_realtime_connections', 'gauge'],
      ['cms_realtime_channels', 'gauge'],
      ['cms_realtime_deliveries_total', 'counter'],
      ['cms_realtime_refused_joins_total', 'counter'],
      ['cms_realtime_dropped_frames_total', 'counter'],
      ['cms_realtime_broadcast_failures_total', 'counter'],
      ['cms_metrics_database_read_failures_total', 'counter'],
      ['cms_build_info', 'gauge'],
      // prom-client's default metrics: event-loop lag, GC, heap, RSS.
      ['nodejs_eventloop_lag_seconds', 'gauge'],
      ['nodejs_gc_duration_seconds', 'histogram'],
      ['nodejs_heap_size_used_bytes', 'gauge'],
      ['process_resident_memory_bytes', 'gauge'],
    ];
    for (const [name, type] of expected) expect([name, families.get(name)?.type]).toEqual([name, type]);
    expect(value(families, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 2 ** 20);
    expect(value(families, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('is read by a parser that refuses what a Prometheus server would refuse', () => {
    expect(() => parse('cms_x 1\n')).toThrow(/no TYPE/);
    expect(() => parse('# HELP cms_x x\n# TYPE cms_x gauge\ncms_x{a="1} 1\n')).toThrow(/unterminated/);
    expect(() => parse('# HELP cms_x x\n# TYPE cms_x gauge\ncms_x one\n')).toThrow(/not a number/);
    const histogramText = (inf: number) => `# HELP cms_h h\n# TYPE cms_h histogram\ncms_h_bucket{le="1",a="b"} 1\ncms_h_bucket{le="+Inf",a="b"} ${inf}\ncms_h_sum{a="b"} 2\ncms_h_count{a="b"} 2\n`;
    expect(histogram(parse(histogramText(2)), 'cms_h', { a: 'b' })).toEqual({ count: 2, sum: 2, inf: 2 });
    expect(() => parse(histogramText(3))).toThrow(/differs from _count/);
  });
});

describe('the request histogram', () => {
  it('puts each duration in the first bucket whose bound it does not exceed, cumulative as Prometheus reads them', async () => {
    const metrics = new Metrics(false);
    const record = requestSeries(metrics);
    const labels = { environment: 'demo', method: 'POST', route: '/x', status_class: '2xx' };
    for (const seconds of [0.001, 0.005, 0.0051, 0.3, 20]) record(labels.environment, labels.method, labels.route, 201, seconds);
    const families = parse(await metrics.scrape());
    expect(value(families, REQUESTS, labels)).toBe(5);
    const bucket = (le: string) => families.get(DURATIONS)!.samples.find((s) => s.name === `${DURATIONS}_bucket` && s.labels.le === le)!.value;
    expect(DURATION_BUCKETS.map((le) => bucket(String(le)))).toEqual([2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4]);
    expect(bucket('+Inf')).toBe(5);
    expect(histogram(families, DURATIONS, labels)).toEqual({ count: 5, sum: 0.001 + 0.005 + 0.0051 + 0.3 + 20, inf: 5 });
  });
});
