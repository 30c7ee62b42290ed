// System administration (spec: Endpoints "System administration"): browser sessions only, every
// route behind require_admin (config.admin, checked in request-context.ts before the body is
// read), every mutation with a reason, an admin audit row and its event (trail.ts).
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import { adminAccessRoutes } from './access.js';
import { adminAgentRoutes } from './agents.js';
import { adminAuditRoutes } from './audit.js';
import { adminHealthRoutes } from './health.js';
import type { RealtimeStats } from './health-checks.js';
import { adminQueueRoutes } from './queue.js';
import { adminReportRoutes } from './reports.js';
import { adminSchemaRoutes } from './schema.js';
import { adminSubjectRoutes } from './subjects/routes.js';

export const adminRoutes: FastifyPluginAsync<{ config: Config; realtime?: () => RealtimeStats }> = async (app, { config, realtime }) => {
  await app.register(adminHealthRoutes, { config, ...(realtime ? { realtime } : {}) });
  await app.register(adminQueueRoutes);
  await app.register(adminAuditRoutes);
  await app.register(adminAgentRoutes);
  await app.register(adminAccessRoutes);
  await app.register(adminReportRoutes);
  await app.register(adminSchemaRoutes);
  await app.register(adminSubjectRoutes);
};
