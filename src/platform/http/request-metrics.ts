// The request series of the metrics (issue 20): a counter and a duration histogram by environment,
// method, route pattern and status class. The route is Fastify's pattern (`/reports/:report_id`),
// never the URL: every path that matched no route shares the label `unmatched`, so a scanner
// cannot grow the series without bound. Installed only when metrics are on.
//
// Both series are one CountedHistogram (plain numbers per label set, formatted at scrape time:
// src/platform/metrics.ts), whose counts are also the requests counter.
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from '../metrics.js';

export const UNMATCHED_ROUTE = 'unmatched';
/** A request outside any environment: GET /, an unknown host, a request refused before resolution. */
export const NO_ENVIRONMENT = 'none';
/** Upper bounds in seconds: prom-client's default buckets. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** The class of a status code by its first digit, without building a string per request. */
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** Registers the two series; the function returned adds one answered request. */
export function requestSeries(metrics: Metrics) {
  const histogram = metrics.countedHistogram(
    'cms_http_request_duration_seconds',
    'Time from receiving a request to the end of its answer, by environment, method, route pattern and status class',
    ['environment', 'method', 'route', 'status_class'],
    DURATION_BUCKETS,
    { name: 'cms_http_requests_total', help: 'HTTP requests answered, by environment, method, route pattern and status class' },
  );
  return (environment: string, method: string, route: string, statusCode: number, seconds: number): void => {
    const digit = Math.floor(statusCode / 100);
    const status_class = STATUS_CLASSES[digit] ?? `${digit}xx`;
    const key = `${environment} ${method} ${route} ${status_class}`;
    histogram.observe(histogram.get(key) ?? histogram.create(key, { environment, method, route, status_class }), seconds);
  };
}

/** Registered on the root instance (fastify-plugin: not encapsulated), so every route is counted. */
export const requestMetricsPlugin = fp<{ metrics: Metrics }>(async (app, { metrics }) => {
  const record = requestSeries(metrics);
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    // A request answered by a not-found handler matched no route: its URL is not a pattern.
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
    const environment = (request.environment as { name?: string } | undefined)?.name ?? NO_ENVIRONMENT;
    record(environment, request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}, { name: 'request-metrics' });
