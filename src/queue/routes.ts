import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const actionQueueRoutes: FastifyPluginAsyncTypebox = async () => {};
