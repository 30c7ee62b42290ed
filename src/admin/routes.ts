// System administration (spec: Endpoints "System administration"): browser sessions only, every
// route behind require_admin (config.admin, checked in request-context.ts before the body is
// read), every mutation with a reason, an admin audit row and its event (trail.ts).
import type { FastifyPluginAsync } from 'fastify';
import type { Config, EnvironmentName } from '../config.js';
import { adminAccessRoutes } from './access.js';
import { adminAgentRoutes } from './agents.js';
import { adminAuditRoutes } from './audit.js';
import { adminHealthRoutes } from './health.js';
import type { RealtimeStats } from './health-checks.js';
import { adminQueueRoutes } from './queue.js';
import { adminReportRoutes } from './reports.js';
import { retentionHealth } from './retention/health.js';
import type { RetentionScheduler } from './retention/scheduler.js';
import { adminSchemaRoutes } from './schema.js';
import { adminSubjectRoutes } from './subjects/routes.js';

export interface AdminRoutesOptions {
  config: Config;
  realtime?: () => RealtimeStats;
  /** This instance's retention schedule (src/admin/retention), shown in health. */
  retention?: RetentionScheduler;
}

export const adminRoutes: FastifyPluginAsync<AdminRoutesOptions> = async (app, { config, realtime, retention }) => {
  const retentionOf = (env: EnvironmentName) => retentionHealth(retention, env === 'production');
  await app.register(adminHealthRoutes, { config, retention: retentionOf, ...(realtime ? { realtime } : {}) });
  await app.register(adminQueueRoutes);
  await app.register(adminAuditRoutes);
  await app.register(adminAgentRoutes);
  await app.register(adminAccessRoutes);
  await app.register(adminReportRoutes);
  await app.register(adminSchemaRoutes);
  await app.register(adminSubjectRoutes);
};
