// GET /audit (spec: Audit log): the canonical events with a readable line each. Events about reports
// the caller may not see (report-access.ts) stay hidden whatever the parameters; the bot sees them all.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { readDb } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { describeEvent, findCaseIds, searchEvents } from './queries.js';
import { AuditList, AuditQuery } from './schemas.js';

export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/audit',
    {
      config: { auth: 'either', permission: 'decide_appeal' },
      schema: { tags: ['Audit'], operationId: 'searchEvents', summary: 'Canonical events: search, filter, sort and page', querystring: AuditQuery, response: { 200: AuditList, ...errorResponses(400, ...COMMON_ERRORS) } },
    },
    async (request) => {
      const query = request.query;
      const limit = query.limit ?? 100;
      const offset = query.offset ?? 0;
      const search = query.search || undefined;
      const db = readDb(request);
      const caseIds = search === undefined ? [] : await findCaseIds(db, search);
      const filter = {
        search,
        caseIds: caseIds.length > 0 ? caseIds : undefined,
        events: (query.event ?? '').split(',').map((e) => e.trim()).filter((e) => e.length > 0),
        reportId: query.report_id,
        supervisor: query.supervisor,
        principal: request.principal,
        sort: query.sort ?? 'newest',
        limit,
        offset,
      };
      const { total, totalCapped, events } = await searchEvents(db, filter);
      return { success: true as const, total, total_capped: totalCapped, offset, limit, events: events.map((event) => ({ ...event, text: describeEvent(event) })) };
    },
  );
};
