// The METRICS_PORT listener: serves GET /metrics and nothing else. It has none of the API's hooks
// (no Host resolution, no sessions, no CORS): a scraper on the operator's network reaches it by
// address; the public port never answers /metrics.
//
// It is Node's own HTTP server, not a second Fastify instance: a second instance in the process
// made every API request cost more CPU (about 4 µs of GET /auth/me's 50, measured in
// docs/performance.md, "Metrics overhead"): Fastify's request path is shared module code, and
// requests through two instances' request and reply classes leave it polymorphic. One route needs
// nothing of a framework.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import { errors } from '../errors.js';

/** Slow or silent scrapers are cut off like the API's (REQUEST_TIMEOUT_SECONDS, HEADERS_TIMEOUT_SECONDS defaults). */
const REQUEST_TIMEOUT_MS = 30_000;
const HEADERS_TIMEOUT_MS = 10_000;

export interface MetricsServer {
  /** Where it listens (port 0 in, the ephemeral port out). */
  address(): AddressInfo;
  /** Stops listening and closes every connection, idle or not. */
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, type: string, body: string, head: boolean): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

const json = (res: ServerResponse, status: number, body: object, head: boolean) =>
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body), head);

export function metricsHandler(metrics: Metrics, log?: Logger) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0]!;
    const head = method === 'HEAD';
    // Everything but GET (or HEAD) /metrics, whatever the host: 404 in the API's envelope.
    if (path !== '/metrics' || (method !== 'GET' && !head)) {
      const notFound = errors.routeNotFound(method, path);
      return json(res, 404, { success: false, error: notFound.message, code: notFound.code }, head);
    }
    metrics.scrape().then(
      (text) => send(res, 200, metrics.contentType, text, head),
      (err: Error) => {
        log?.error({ err }, 'metrics scrape failed');
        json(res, 500, { success: false, error: `Metrics scrape failed: ${err.message}`, code: 'INTERNAL_ERROR' }, head);
      },
    );
  };
}

/** Opens the listener on `host:port` (port 0: an ephemeral port); close() the result to stop it. */
export async function listenMetrics(metrics: Metrics, options: { host: string; port: number; log?: Logger }): Promise<MetricsServer> {
  const server: Server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: HEADERS_TIMEOUT_MS }, metricsHandler(metrics, options.log));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = () => server.address() as AddressInfo;
  options.log?.info({ address: `http://${options.host}:${address().port}` }, 'metrics listening');
  let closing: Promise<void> | undefined;
  return {
    address,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
