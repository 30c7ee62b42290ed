// The METRICS_PORT listener: a Fastify instance of its own that serves GET /metrics and nothing
// else. It has none of the API's hooks (no Host resolution, no sessions, no CORS): a scraper on the
// operator's network reaches it by address; the public port never answers /metrics.
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import { errors } from '../errors.js';

export function buildMetricsServer(metrics: Metrics, log?: Logger): FastifyInstance {
  const server = Fastify({ logger: false, forceCloseConnections: true });
  server.get('/metrics', async (_request, reply) => {
    try {
      const text = await metrics.scrape();
      return reply.type(metrics.contentType).send(text);
    } catch (err) {
      log?.error({ err }, 'metrics scrape failed');
      return reply.code(500).type('application/json').send({ success: false, error: `Metrics scrape failed: ${(err as Error).message}`, code: 'INTERNAL_ERROR' });
    }
  });
  // Everything else, whatever the method or host: 404 in the API's envelope.
  server.setNotFoundHandler((request, reply) => {
    const notFound = errors.routeNotFound(request.method, request.url.split('?')[0] ?? '/');
    return reply.code(404).send({ success: false, error: notFound.message, code: notFound.code });
  });
  return server;
}

/** Opens the listener on `host:port` (port 0: an ephemeral port); close() the result to stop it. */
export async function listenMetrics(metrics: Metrics, options: { host: string; port: number; log?: Logger }): Promise<FastifyInstance> {
  const server = buildMetricsServer(metrics, options.log);
  await server.listen({ host: options.host, port: options.port });
  options.log?.info({ address: server.addresses()[0] }, 'metrics listening');
  return server;
}
