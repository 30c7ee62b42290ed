// The request series of the metrics (issue 20): a counter and a duration histogram by environment,
// method, route pattern and status class. The route is Fastify's pattern (`/reports/:report_id`),
// never the URL: every path that matched no route shares the label `unmatched`, so a scanner
// cannot grow the series without bound. Installed only when metrics are on.
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Counter, Histogram } from 'prom-client';
import type { Metrics } from '../metrics.js';

export const UNMATCHED_ROUTE = 'unmatched';
/** A request outside any environment: GET /, an unknown host, a request refused before resolution. */
export const NO_ENVIRONMENT = 'none';

type Labels = 'environment' | 'method' | 'route' | 'status_class';

/** Registered on the root instance (fastify-plugin: not encapsulated), so every route is counted. */
export const requestMetricsPlugin = fp<{ metrics: Metrics }>(async (app, { metrics }) => {
  const requests = metrics.counter('cms_http_requests_total', 'HTTP requests answered, by environment, method, route pattern and status class', ['environment', 'method', 'route', 'status_class']);
  const durations = metrics.histogram('cms_http_request_duration_seconds', 'Time from receiving a request to the end of its answer, by environment, method, route pattern and status class', ['environment', 'method', 'route', 'status_class']);
  // prom-client hashes the label object on every call; the bound children are kept per label set
  // instead (their number is bounded: routes x methods x classes x environments).
  const bound = new Map<string, { count: ReturnType<Counter<Labels>['labels']>; time: ReturnType<Histogram<Labels>['labels']> }>();
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    // A request answered by a not-found handler matched no route: its URL is not a pattern.
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
    const environment = (request.environment as { name?: string } | undefined)?.name ?? NO_ENVIRONMENT;
    const statusClass = `${Math.floor(reply.statusCode / 100)}xx`;
    const key = `${environment} ${request.method} ${route} ${statusClass}`;
    let series = bound.get(key);
    if (series === undefined) {
      const labels = { environment, method: request.method, route, status_class: statusClass };
      series = { count: requests.labels(labels), time: durations.labels(labels) };
      bound.set(key, series);
    }
    series.count.inc();
    series.time.observe(reply.elapsedTime / 1000);
    done();
  });
}, { name: 'request-metrics' });
