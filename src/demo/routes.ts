// POST /demo/reset (spec: Authentication and session): the demo database back to its seeded state.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { resetDemo } from './seed.js';
import { afterCommit } from '../platform/after-commit.js';

const ResetResult = Type.Object({ success: Type.Literal(true) });

export const demoRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/demo/reset',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['Demo'],
        operationId: 'resetDemo',
        summary: 'Re-seed the demo database (demo environment only)',
        description:
          'Deletes every demo record and writes the fictional organisation again, in one transaction; requests keep being ' +
          'served meanwhile. Sessions of the seeded agents (the caller\'s included) stay valid. 403 DEMO_ONLY elsewhere.',
        response: { 200: ResetResult, ...errorResponses(...COMMON_ERRORS) },
      },
    },
    async (request) => {
      if (request.environment.name !== 'demo') {
        throw errors.forbidden('Demo reset is only available in the demo environment', 'DEMO_ONLY');
      }
      await request.environment.db.transaction(resetDemo);
      await afterCommit(request.environment, () => request.environment.sessions.clear());
      request.log.info({ actor: request.principal?.kind === 'session' ? request.principal.agent.chat_id : null }, 'demo reset');
      return { success: true as const };
    },
  );
};
