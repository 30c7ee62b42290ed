// buildApp(config, environments) -> the Fastify instance. server.ts and the tests build the same app.
import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import formbody from '@fastify/formbody';
import rateLimit from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';
import type { Environments } from './platform/environments.js';
import { createClientErrorHandler, createErrorHandling, errorHandlerPlugin, MAX_PARAM_LENGTH, notFoundHandler } from './platform/http/error-handler.js';
import { idempotencyPlugin } from './platform/http/idempotency.js';
import { refuseUnstorableInput } from './platform/http/input-guard.js';
import { jsonBodyPlugin } from './platform/http/json-body.js';
import { serializeRequest } from './platform/http/request-log.js';
import { requestMetricsPlugin } from './platform/http/request-metrics.js';
import { securityHeadersPlugin } from './platform/http/security-headers.js';
import { Metrics } from './platform/metrics.js';
import { errors } from './platform/errors.js';
import { Readiness } from './platform/readiness.js';
import { buildInfo } from './platform/build-info.js';
import { openApiPlugin } from './platform/http/openapi.js';
import { BODY_LIMIT, refuseDuplicateHost, refuseOversizedBody, requestContextPlugin } from './platform/http/request-context.js';
import { validatorCompiler } from './platform/http/validation.js';
import { buildSerializer } from './platform/http/serialization.js';
import { utilitiesRoutes } from './utilities/routes.js';
import { oauthRoutes } from './auth/oauth-routes.js';
import { localSignInRoutes } from './auth/local-routes.js';
import { demoRoutes } from './demo/routes.js';
import { agentsRoutes } from './agents/routes.js';
import { reportsRoutes } from './reports/routes.js';
import { reportActionRoutes } from './reports/actions.js';
import { reportWorkingDataRoutes } from './reports/working-data.js';
import { Agent } from './agents/schemas.js';
import { sessionRoutes } from './auth/session-routes.js';
import { contactRoutes } from './contact/routes.js';
import { evidenceRoutes } from './evidence/routes.js';
import { auditRoutes } from './audit/routes.js';
import { actionQueueRoutes } from './queue/routes.js';
import { punishmentRoutes } from './punishments/routes.js';
import { disciplineRoutes } from './discipline/routes.js';
import { adminRoutes } from './admin/routes.js';
import { RetentionScheduler } from './admin/retention/scheduler.js';
import { gameRoutes } from './game/routes.js';
import { trainingRoutes } from './training/routes.js';
import { trainingSessionRoutes } from './training/session-routes.js';
import { trainingActivityRoutes } from './training/activity-routes.js';
import { memberGate } from './training/session-access.js';
import type { Broadcaster } from './training/broadcaster.js';
import websocket from '@fastify/websocket';
import { ConnectionCaps } from './realtime/caps.js';
import { RealtimeHub, MAX_FRAME_BYTES, type HubOptions } from './realtime/hub.js';
import { deliverNotifications, NotifyBroadcaster } from './realtime/fanout.js';
import { realtimeRoutes } from './realtime/routes.js';
import { SupabaseBroadcaster, type SupabaseTarget } from './realtime/supabase.js';
import { ENVIRONMENTS, type EnvironmentName } from './config.js';
import { GameServer } from './game/players.js';

export interface BuildAppOptions {
  config: Config;
  environments: Environments;
  /** The app closes the environments when it closes (default true). */
  ownsEnvironments?: boolean;
  logger?: Logger;
  /** More routes for the API context (the tests add probes of the error handler this way). */
  extraRoutes?: (api: FastifyInstance) => void | Promise<void>;
  /** Where live training events go; by default the realtime hub (or the Supabase project configured). */
  broadcaster?: Broadcaster;
  /** GET /ready's state; the process entry keeps it to flip it first thing on SIGTERM. */
  readiness?: Readiness;
  /** The metrics the environments were opened with (server.ts); by default on when METRICS_PORT is set. */
  metrics?: Metrics;
  /** The realtime hub's settings that are not configuration (the tests shorten its join timeout). */
  hub?: HubOptions;
  /** How often the retention looks for closed cases to erase (RETENTION_DAYS); the tests shorten it. */
  retentionIntervalMs?: number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp({ config, environments, ownsEnvironments = true, logger, extraRoutes, broadcaster, readiness = new Readiness(environments), metrics = new Metrics(config.metricsPort !== undefined), hub: hubOptions, retentionIntervalMs }: BuildAppOptions): Promise<FastifyInstance> {
  // Every request line goes through one serializer that keeps the OAuth callback's code and state out.
  const log = (logger ?? pino({ level: config.logLevel })).child({}, { serializers: { req: serializeRequest } });
  // Fastify's per-request logging (a child logger and response listeners on every request) is
  // the largest cost of a light request: it is switched on only when its lines would be written
  // (level info or finer). Above info, a request's logger is the root logger itself, so that what
  // Fastify logs of its own at warn or error (a promise that failed after its answer was sent) is
  // still written, without the request id; the lines its log controller writes (a serializer's or
  // a stream's failure) stay off with the request lines. Measured on `root`: a child made only when
  // a line is written cost a light request 5%, a log controller of our own that kept those lines
  // 7%. Errors are logged through the root logger with the request id.
  const requestLogging = log.isLevelEnabled('info');
  const errorHandling = createErrorHandling(log);
  const app = Fastify({
    loggerInstance: log,
    ...(requestLogging ? {} : { childLoggerFactory: (root: FastifyBaseLogger) => root }),
    bodyLimit: BODY_LIMIT,
    trustProxy: config.trustProxy,
    // Honour a caller's request id when it is a sane token; otherwise mint one.
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: !requestLogging }),
    forceCloseConnections: 'idle',
    // Fastify's own 503 while closing has its own body; the hook below answers in the envelope.
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    schemaController: { compilersFactory: { buildSerializer } },
    // Errors the router raises before any route (bad percent-encoding, an over-long parameter) and
    // those Node's parser raises on the socket (431, 408) are answered in the envelope too.
    frameworkErrors: (err, request, reply) => errorHandling.handle(err, request, reply),
    clientErrorHandler: createClientErrorHandler(log),
    // A request (headers and body) must arrive within REQUEST_TIMEOUT_SECONDS and its headers within
    // HEADERS_TIMEOUT_SECONDS, else 408 and the socket closed: without them a body that never
    // comes holds a socket forever. Node checks every connectionsCheckingInterval (30 s by default,
    // far coarser than the timeouts), so the check runs at a quarter of the shorter one, at most 1 s.
    requestTimeout: config.requestTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Bodies are JSON (and form where a route opts in); Fastify's default text/plain parser would
  // hand a string to routes that expect an object. An empty JSON body is no body (json-body.ts).
  app.removeContentTypeParser('text/plain');
  await app.register(jsonBodyPlugin);
  await app.register(errorHandlerPlugin, { handling: errorHandling });
  app.decorate('metrics', metrics);
  if (metrics.enabled) await app.register(requestMetricsPlugin, { metrics });
  app.addHook('onRequest', refuseDuplicateHost);
  await app.register(securityHeadersPlugin);
  // Requests still arriving on kept-alive connections once close() began: 503, connection closed.
  // GET /ready answers them itself: 503 with what each environment is (shutting down).
  let closing = false;
  app.addHook('preClose', async () => {
    readiness.shutDown();
    closing = true;
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    done(request.routeOptions.url === '/ready' ? undefined : errors.shuttingDown());
  });
  const allowedOrigins = new Set([...config.dashboardOrigins, ...config.trainingOrigins]);
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && allowedOrigins.has(origin)),
    credentials: true,
    methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id', 'Idempotency-Key'],
    exposedHeaders: ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed'],
    maxAge: 600,
  });
  // GET / answers for any host without an environment, so it stays outside the API context
  // and its hooks (host resolution, sessions, cookies): it is the load balancer's health probe.
  app.get(
    '/',
    { config: { auth: 'none' }, schema: { hide: true }, onRequest: refuseOversizedBody },
    async (_request, reply) => reply.type('text/plain; charset=utf-8').send(`${config.serviceName} API Online`),
  );
  // GET /ready, the readiness probe, likewise outside the API context (src/platform/readiness.ts).
  app.get('/ready', { config: { auth: 'none' }, schema: { hide: true }, onRequest: refuseOversizedBody }, async (_request, reply) => {
    const { ready, shuttingDown, environments: states } = await readiness.check();
    // Which release answers: during a rolling upgrade the balancer's probes tell the two apart.
    const { version, commit } = buildInfo();
    reply.header('cache-control', 'no-store');
    if (ready) return reply.send({ success: true, version, commit, environments: states });
    const failed = Object.entries(states).filter(([, state]) => state !== 'ok').map(([name, state]) => `${name} ${state}`);
    const err = shuttingDown ? errors.shuttingDown() : errors.notReady(failed.join('; '));
    return reply.code(503).send({ success: false, error: err.message, code: err.code, version, commit, environments: states });
  });

  // One game server for both environments: the relays and the key are not per environment.
  const game =
    config.gameRelayUrls.length > 0 && config.gameServerKey
      ? new GameServer({ relayUrls: config.gameRelayUrls, serverKey: config.gameServerKey, timeoutMs: config.gameRelayTimeoutMs, ttlMs: config.gamePlayersTtlMs, log })
      : undefined;

  // The realtime hub, fed by every environment's notifications; broadcasts go out through NOTIFY (to
  // every instance's hub) or, for an environment with an external Supabase project, its REST API.
  const hub = new RealtimeHub(environments, log, hubOptions);
  const caps = new ConnectionCaps({ perAddress: config.realtimeMaxConnectionsPerAddress, total: config.realtimeMaxConnections });
  deliverNotifications(environments, hub, log);
  const supabaseTargets: Partial<Record<EnvironmentName, SupabaseTarget>> = {};
  for (const name of ENVIRONMENTS) {
    const { realtimeUrl, supabaseServiceKey } = config.environments[name];
    if (realtimeUrl && supabaseServiceKey) supabaseTargets[name] = { url: realtimeUrl, serviceKey: supabaseServiceKey };
  }
  const notify = new NotifyBroadcaster(environments);
  const supabase = Object.keys(supabaseTargets).length > 0 ? new SupabaseBroadcaster(supabaseTargets, log, notify) : undefined;
  const broadcastStats = { failures: 0 };
  const realtimeStats = () => ({ ...hub.stats(), broadcast_failures: broadcastStats.failures + (supabase?.failures ?? 0) });
  // Closed cases past RETENTION_DAYS erased on a schedule (src/admin/retention), production only.
  const retention = new RetentionScheduler({ days: config.retentionDays, production: () => environments.get('production'), log, intervalMs: retentionIntervalMs });
  app.addHook('onReady', async () => retention.start());
  app.addHook('preClose', () => retention.stop());
  await app.register(websocket, {
    options: { maxPayload: MAX_FRAME_BYTES },
    // Shutdown sends every client a close frame (1001) instead of dropping the connection.
    preClose: (done) => {
      hub.close();
      done();
    },
  });

  await app.register(async (api) => {
    api.setNotFoundHandler(notFoundHandler);
    await api.register(cookie);
    // Before the request context: its onSend (the caller's read position) runs after the commit.
    await api.register(idempotencyPlugin, { ttlHours: config.idempotencyKeyTtlHours, logError: errorHandling.log, log });
    await api.register(requestContextPlugin, {
      environments,
      allowedOrigins,
      replicated: ENVIRONMENTS.some((name) => config.environments[name].replicaUrls.length > 0),
      log,
    });
    await api.register(formbody, { bodyLimit: BODY_LIMIT });
    // The training session membership a route declares: like every gate, before the input is looked at.
    api.addHook('preValidation', memberGate);
    // NUL characters, lone surrogates and over-deep JSON, in every body, query and path parameter.
    api.addHook('preValidation', refuseUnstorableInput);
    await api.register(openApiPlugin, { serviceName: config.serviceName });
    api.addSchema(Agent);

    // Only the routes that declare config.rateLimit (the sign-in routes) are limited, per client
    // address and in this instance's memory: a shared store would be a write per anonymous request.
    await api.register(rateLimit, {
      global: false,
      errorResponseBuilder: (_request, { ttl }) => errors.rateLimited('sign-in requests', Math.max(1, Math.ceil(ttl / 1000))),
    });
    await api.register(utilitiesRoutes);
    await api.register(oauthRoutes, { config });
    // DEMO_LOCAL_SIGNIN off: the routes do not exist (404 as any unknown route).
    if (config.demoLocalSignin) await api.register(localSignInRoutes, { config });
    await api.register(agentsRoutes);
    await api.register(reportsRoutes);
    await api.register(reportActionRoutes);
    await api.register(reportWorkingDataRoutes);
    await api.register(sessionRoutes);
    await api.register(demoRoutes);
    await api.register(contactRoutes);
    await api.register(evidenceRoutes);
    await api.register(auditRoutes);
    await api.register(actionQueueRoutes);
    await api.register(punishmentRoutes);
    await api.register(disciplineRoutes);
    await api.register(adminRoutes, { config, realtime: realtimeStats, retention });
    await api.register(gameRoutes, { game });
    await api.register(trainingRoutes);
    const training = { broadcaster: broadcaster ?? supabase ?? notify, log, stats: broadcastStats };
    await api.register(trainingSessionRoutes, training);
    await api.register(trainingActivityRoutes, training);
    await api.register(realtimeRoutes, { hub, caps });
    if (extraRoutes) await api.register(async (scope) => extraRoutes(scope as unknown as FastifyInstance));
  });

  if (ownsEnvironments) app.addHook('onClose', () => environments.close());
  return app as unknown as FastifyInstance;
}
