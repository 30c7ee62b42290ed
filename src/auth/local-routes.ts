// DEMO_LOCAL_SIGNIN (issue 20): a local sign-in page for front-end development, as one of the
// demo environment's fictional agents, without a chat-platform application. Registered only when
// the setting is on; even then, any environment but demo answers exactly as an unknown route does,
// whatever the host or the other settings. The session it starts is the OAuth callback's own
// (sign-in.ts): same row, same cookie, same fixation defence; it differs only in who vouches.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { SIGN_IN_STATUSES } from '../platform/auth/agent-row.js';
import { errors } from '../platform/errors.js';
import { notFoundHandler } from '../platform/http/error-handler.js';
import { errorResponses } from '../platform/http/schemas.js';
import { findFictionalAgents, FICTIONAL_CHAT_IDS } from './local-queries.js';
import { localSignInPage } from './local-page.js';
import { LocalPage, LocalPageQuery, LocalSignInBody } from './local-schemas.js';
import { RedirectResponse } from './oauth-schemas.js';
import { allowedReturnTo, signInRateLimit, startSession } from './sign-in.js';

export interface LocalSignInRoutesOptions {
  config: Config;
}

const tags = ['Authentication'];

export const localSignInRoutes: FastifyPluginAsyncTypebox<LocalSignInRoutesOptions> = async (app, { config }) => {
  const returnOrigins = new Set([...config.dashboardOrigins, ...config.trainingOrigins]);
  const homeOrigin = config.dashboardOrigins[0] ?? config.trainingOrigins[0];

  // This plugin's routes only (encapsulated): outside demo they do not exist.
  app.addHook('onRequest', async (request) => {
    if (request.environment.name !== 'demo') notFoundHandler(request);
  });

  /**
   * Login CSRF: a foreign page posting this form would sign its visitor in as a demo agent of its
   * choosing. A browser sends Origin on every POST; only this service's own pages and the
   * dashboard and training origins may post (a request without Origin comes from no browser page).
   */
  function refuseForeignOrigin(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
    const origin = request.headers.origin;
    const own = `${request.protocol}://${request.host}`.toLowerCase();
    const allowed = origin === undefined || origin.toLowerCase() === own || returnOrigins.has(origin);
    done(allowed ? undefined : errors.forbidden(`Origin ${origin} may not sign in here`, 'ORIGIN_NOT_ALLOWED'));
  }

  app.get(
    '/auth/local',
    {
      config: { auth: 'none', rateLimit: signInRateLimit(config) },
      schema: {
        tags,
        operationId: 'getDemoSignInPage',
        summary: 'Demo only (DEMO_LOCAL_SIGNIN): the local sign-in page listing the fictional demo agents',
        description: 'Exists only when DEMO_LOCAL_SIGNIN is true, and only in the demo environment: 404 on any other host.',
        querystring: LocalPageQuery,
        response: { 200: LocalPage, ...errorResponses(400, 404, 421, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const returnTo = request.query.return_to === undefined ? undefined : allowedReturnTo(request.query.return_to, returnOrigins);
      const agents = await findFictionalAgents(request.environment.db);
      const { html, csp } = localSignInPage(agents, returnTo, [...returnOrigins]);
      return reply
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .header('content-security-policy', csp)
        .type('text/html; charset=utf-8')
        .send(html);
    },
  );

  app.post(
    '/auth/local',
    {
      config: { auth: 'none', acceptsForm: true, rateLimit: signInRateLimit(config) },
      onRequest: refuseForeignOrigin,
      schema: {
        tags,
        operationId: 'signInAsDemoAgent',
        summary: 'Demo only (DEMO_LOCAL_SIGNIN): sign in as a fictional demo agent',
        description:
          'Form or JSON. Starts the same session as the chat-platform sign-in (cookie cms_session, 12 hours; any previous ' +
          'session of this browser ends) and redirects (303) to return_to, else the first dashboard or training origin, else ' +
          '/auth/me. 400 for a chat id that is not a fictional demo agent; 403 AGENT_NOT_ACTIVE for one not active or ' +
          'onboarding; 403 ORIGIN_NOT_ALLOWED from a foreign page. Exists only when DEMO_LOCAL_SIGNIN is true, and only in ' +
          'the demo environment: 404 on any other host.',
        body: LocalSignInBody,
        response: { 303: RedirectResponse, ...errorResponses(400, 403, 404, 413, 415, 421, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const { chat_id: chatId, return_to: rawReturnTo } = request.body;
      const returnTo = rawReturnTo === undefined ? undefined : allowedReturnTo(rawReturnTo, returnOrigins, 'body.return_to');
      if (!FICTIONAL_CHAT_IDS.includes(chatId)) {
        throw errors.validation(`body.chat_id ${chatId} is not a fictional demo agent: choose one listed at GET /auth/local`);
      }
      const [agent] = await findFictionalAgents(request.environment.db, [chatId]);
      if (agent === undefined) throw errors.notFound(`Demo agent ${chatId} (reset the demo to restore it)`);
      if (!SIGN_IN_STATUSES.includes(agent.status)) {
        throw errors.forbidden(`Demo agent ${agent.name ?? chatId} is ${agent.status}: only active or onboarding agents can sign in`, 'AGENT_NOT_ACTIVE');
      }
      await startSession(request, reply, agent.chat_id);
      request.log.info({ chat_id: agent.chat_id }, 'local demo sign-in succeeded');
      const target = returnTo ?? (homeOrigin === undefined ? '/auth/me' : `${homeOrigin}/`);
      return reply.header('cache-control', 'no-store').redirect(target, 303);
    },
  );
};
