// buildApp(config, environments) -> the Fastify instance. server.ts and the tests build the same app.
import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import formbody from '@fastify/formbody';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Environments } from './platform/environments.js';
import { errorHandlerPlugin } from './platform/http/error-handler.js';
import { openApiPlugin } from './platform/http/openapi.js';
import { BODY_LIMIT, requestContextPlugin } from './platform/http/request-context.js';
import { validatorCompiler } from './platform/http/validation.js';
import { utilitiesRoutes } from './utilities/routes.js';
import { oauthRoutes } from './auth/oauth-routes.js';
import { demoRoutes } from './demo/routes.js';
import { agentsRoutes } from './agents/routes.js';
import { Agent } from './agents/schemas.js';
import { sessionRoutes } from './auth/session-routes.js';

export interface BuildAppOptions {
  config: Config;
  environments: Environments;
  /** The app closes the environments when it closes (default true). */
  ownsEnvironments?: boolean;
  logger?: FastifyBaseLogger;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp({ config, environments, ownsEnvironments = true, logger }: BuildAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: { level: config.logLevel } }),
    bodyLimit: BODY_LIMIT,
    trustProxy: config.trustProxy,
    // Honour a caller's request id when it is a sane token; otherwise mint one.
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Bodies are JSON (and form where a route opts in); Fastify's default text/plain parser would
  // hand a string to routes that expect an object.
  app.removeContentTypeParser('text/plain');
  await app.register(errorHandlerPlugin);
  const allowedOrigins = new Set([...config.dashboardOrigins, ...config.trainingOrigins]);
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && allowedOrigins.has(origin)),
    credentials: true,
    methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id'],
    exposedHeaders: ['X-Request-Id', 'Retry-After'],
    maxAge: 600,
  });
  await app.register(cookie);
  await app.register(requestContextPlugin, { environments, allowedOrigins });
  await app.register(formbody, { bodyLimit: BODY_LIMIT });
  await app.register(openApiPlugin, { serviceName: config.serviceName });
  app.addSchema(Agent);

  app.get(
    '/',
    { config: { auth: 'none', environment: false }, schema: { hide: true } },
    async (_request, reply) => reply.type('text/plain; charset=utf-8').send(`${config.serviceName} API Online`),
  );
  await app.register(utilitiesRoutes);
  await app.register(oauthRoutes, { config });
  await app.register(agentsRoutes);
  await app.register(sessionRoutes);

  await app.register(demoRoutes);
  if (ownsEnvironments) app.addHook('onClose', () => environments.close());
  return app as unknown as FastifyInstance;
}
