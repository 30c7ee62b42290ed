import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const disciplineRoutes: FastifyPluginAsyncTypebox = async () => {};
