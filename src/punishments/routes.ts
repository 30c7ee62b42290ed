import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const punishmentRoutes: FastifyPluginAsyncTypebox = async () => {};
