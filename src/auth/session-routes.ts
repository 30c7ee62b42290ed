// The signed-in agent's view of itself, and signing out (spec: Authentication and session).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminCapabilities, sessionAgent } from '../platform/auth/guards.js';
import { isSupervisorRank, MINIMUM_CLEARANCES, permissionFlags } from '../platform/auth/permissions.js';
import { destroySession, SESSION_COOKIE } from '../platform/auth/sessions.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { LogoutResult, MeResult } from './session-schemas.js';
import { afterCommit } from '../platform/after-commit.js';

const tags = ['Authentication'];

export const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/auth/me',
    {
      config: { auth: 'session' },
      schema: { tags, operationId: 'getCurrentAgent', summary: 'The live signed-in agent, its permissions and admin capabilities', response: { 200: MeResult, ...errorResponses(...COMMON_ERRORS) } },
    },
    async (request) => {
      const agent = sessionAgent(request);
      const allowlisted = request.principal?.kind === 'session' && request.principal.allowlisted;
      return {
        success: true as const,
        agent,
        permissions: permissionFlags(agent),
        can_handle_supervisor: isSupervisorRank(agent.agent_rank),
        minimum_clearances: MINIMUM_CLEARANCES,
        admin: { allowlisted, capabilities: adminCapabilities(agent, allowlisted) },
      };
    },
  );

  app.post(
    '/auth/logout',
    {
      config: { auth: 'session' },
      schema: { tags, operationId: 'signOut', summary: 'End this session', response: { 200: LogoutResult, ...errorResponses(...COMMON_ERRORS) } },
    },
    async (request, reply) => {
      if (request.principal?.kind === 'session') {
        await destroySession(request.environment.db, request.principal.token);
        const chatId = request.principal.agent.chat_id;
        await afterCommit(request.environment, () => request.environment.sessions.invalidate(chatId));
      }
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { success: true as const };
    },
  );
};
