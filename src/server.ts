// Process entry: read the config, open both environments, listen, and shut down gracefully on
// SIGTERM/SIGINT (stop accepting, let in-flight requests finish, close the databases).
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { seedDemoOnFirstStart } from './demo/seed.js';
import { Environments } from './platform/environments.js';
import { listenMetrics } from './platform/http/metrics-server.js';
import { collectGarbageOnce } from './platform/memory.js';
import { endOfLifeMessage, nodePastEndOfLife } from './platform/node-support.js';
import { Readiness } from './platform/readiness.js';
import { Metrics } from './platform/metrics.js';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}

const config = readConfig();
const log = pino({ level: config.logLevel });
// It still runs on a Node past its end of life (the machines may ship one), and says so once.
const pastEndOfLife = nodePastEndOfLife(process.versions.node, new Date());
if (pastEndOfLife) log.warn({ node_version: process.version, end_of_life: pastEndOfLife.endOfLife }, endOfLifeMessage(pastEndOfLife));
// Off unless METRICS_PORT is set; then served by a listener of its own, never the public port.
const metrics = new Metrics(config.metricsPort !== undefined);

let environments: Environments;
try {
  environments = await Environments.open(config, { log, onOpen: seedDemoOnFirstStart, metrics });
} catch (err) {
  log.fatal({ err }, (err as Error).message);
  process.exit(1);
}

if (Object.values(config.environments).some((env) => !env.databaseUrl)) collectGarbageOnce();

const readiness = new Readiness(environments);
const app = await buildApp({ config, environments, logger: log, readiness, metrics });
let metricsServer: Awaited<ReturnType<typeof listenMetrics>> | undefined;

// In-flight requests get SHUTDOWN_GRACE_SECONDS to finish; then the connections still open are cut
// (and counted in the log) and the shutdown carries on, closing the databases, to exit 0. Only if
// closing itself hangs does close-with-grace's own deadline, some seconds later, exit 1.
const CLOSE_DEADLINE_MS = config.shutdownGraceMs + 5_000;
closeWithGrace({ delay: CLOSE_DEADLINE_MS, logger: log }, async ({ signal, err }) => {
  // First of all: GET /ready answers 503 from now on, so a balancer still probing over an open
  // connection stops sending here while the requests in flight drain.
  readiness.shutDown();
  if (err) log.error({ err }, 'shutting down after an unhandled error');
  else log.info({ signal }, 'shutting down');
  const grace = setTimeout(() => {
    app.server.getConnections((_, open) => {
      log.warn({ connections: open }, `grace period of ${config.shutdownGraceMs / 1000} s over: cutting ${open} open connection(s)`);
      app.server.closeAllConnections();
    });
  }, config.shutdownGraceMs);
  try {
    // The scrape listener closes with the API: nothing is left listening once the process exits.
    await Promise.all([app.close(), metricsServer?.close()]);
  } finally {
    clearTimeout(grace);
  }
});

await app.listen({ port: config.port, host: config.host });
if (config.metricsPort !== undefined) metricsServer = await listenMetrics(metrics, { host: config.host, port: config.metricsPort, log });
