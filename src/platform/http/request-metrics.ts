// The request series of the metrics (issue 20): a counter and a duration histogram by environment,
// method, route pattern and status class. The route is Fastify's pattern (`/reports/:report_id`),
// never the URL: every path that matched no route shares the label `unmatched`, so a scanner
// cannot grow the series without bound. Installed only when metrics are on.
//
// prom-client's own Counter and Histogram validate and hash the label object on every call, even
// through `labels()` children: the largest item metrics added to a CPU profile of a light request
// (docs/performance.md, metrics-overhead). So a request adds to plain numbers of its label set,
// found by one string key, and the two series are handed to prom-client's registry as collected
// metrics (its `get()` contract), which formats them at scrape time like its own.
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from '../metrics.js';

export const UNMATCHED_ROUTE = 'unmatched';
/** A request outside any environment: GET /, an unknown host, a request refused before resolution. */
export const NO_ENVIRONMENT = 'none';
/** Upper bounds in seconds: prom-client's default buckets. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

const REQUESTS = 'cms_http_requests_total';
const DURATIONS = 'cms_http_request_duration_seconds';

type Labels = { environment: string; method: string; route: string; status_class: string };

interface Series {
  labels: Labels;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is beyond the largest bound. */
  buckets: number[];
}

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** Every label set seen, with its counts: bounded by routes x methods x classes x environments. */
export class RequestSeries {
  private readonly series = new Map<string, Series>();

  record(environment: string, method: string, route: string, statusClass: string, seconds: number): void {
    const key = `${environment} ${method} ${route} ${statusClass}`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = { labels: { environment, method, route, status_class: statusClass }, count: 0, sum: 0, buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0) };
      this.series.set(key, s);
    }
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    s.buckets[i]!++;
  }

  /** The two series as prom-client's registry reads a metric (name, help, type, values). */
  register(metrics: Metrics): void {
    const all = () => [...this.series.values()];
    metrics.registry.registerMetric(collected(REQUESTS, 'HTTP requests answered, by environment, method, route pattern and status class', 'counter', () =>
      all().map((s): Sample => ({ labels: s.labels, value: s.count })),
    ));
    metrics.registry.registerMetric(collected(DURATIONS, 'Time from receiving a request to the end of its answer, by environment, method, route pattern and status class', 'histogram', () =>
      all().flatMap((s): Sample[] => {
        let cumulative = 0;
        const buckets = DURATION_BUCKETS.map((le, i): Sample => ({ labels: { ...s.labels, le }, value: (cumulative += s.buckets[i]!), metricName: `${DURATIONS}_bucket` }));
        return [
          ...buckets,
          { labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${DURATIONS}_bucket` },
          { labels: s.labels, value: s.sum, metricName: `${DURATIONS}_sum` },
          { labels: s.labels, value: s.count, metricName: `${DURATIONS}_count` },
        ];
      }),
    ));
  }
}

/** A metric in the shape prom-client's Registry reads (`get()`), its values computed when scraped. */
function collected(name: string, help: string, type: 'counter' | 'histogram', values: () => Sample[]) {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: metric.aggregator, values: values() }),
    reset: () => undefined,
  };
  return metric as unknown as Parameters<Metrics['registry']['registerMetric']>[0];
}

/** Registered on the root instance (fastify-plugin: not encapsulated), so every route is counted. */
export const requestMetricsPlugin = fp<{ metrics: Metrics }>(async (app, { metrics }) => {
  const series = new RequestSeries();
  series.register(metrics);
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    // A request answered by a not-found handler matched no route: its URL is not a pattern.
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
    const environment = (request.environment as { name?: string } | undefined)?.name ?? NO_ENVIRONMENT;
    series.record(environment, request.method, route, `${Math.floor(reply.statusCode / 100)}xx`, reply.elapsedTime / 1000);
    done();
  });
}, { name: 'request-metrics' });
