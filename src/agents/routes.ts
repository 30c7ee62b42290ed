// Agents (spec: Agents). The bot (API key) and the dashboard (session) share the update route
// with different rules: the bot may set onboarding fields but never the rank; the dashboard path
// is an admin capability with a reason, Director-only rank and clearance changes, no self-edits.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { recordAudit } from '../platform/audit.js';
import { recordEvent } from '../platform/events.js';
import { lockAdmins } from '../admin/trail.js';
import { sessionAgent } from '../platform/auth/guards.js';
import { rankIndex } from '../platform/auth/permissions.js';
import { assertDirectorRemains, assertMayAdminister, mayRemoveDirector } from './administration.js';
import { errors } from '../platform/errors.js';
import { actorOf, readDb } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { agentOf, findAgent, insertAgent, listAgents, lockAgents, updateAgent } from './queries.js';
import { AgentList, AgentListQuery, AgentParams, AgentResult, CreateAgentBody, UpdateAgentBody } from './schemas.js';
import { afterCommit } from '../platform/after-commit.js';

const tags = ['Agents'];
const BOT_FIELDS: ReadonlySet<string> = new Set(['name', 'status', 'security_id', 'agreement_id', 'agent_id', 'clearance_id', 'clearance_level', 'reason']);

export const agentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/agents',
    {
      config: { auth: 'either', permission: 'view_agents' },
      schema: { tags, operationId: 'listAgents', summary: 'All agents, newest first', querystring: AgentListQuery, response: { 200: AgentList, ...errorResponses(400, ...COMMON_ERRORS) } },
    },
    async (request) => ({ success: true as const, agents: await listAgents(readDb(request), request.query.status) }),
  );

  app.get(
    '/agents/:chat_id',
    {
      config: { auth: 'either', permission: 'view_agents' },
      schema: { tags, operationId: 'getAgent', summary: 'One agent', params: AgentParams, response: { 200: AgentResult, ...errorResponses(400, 404, ...COMMON_ERRORS) } },
    },
    async (request) => {
      const agent = await findAgent(readDb(request), request.params.chat_id);
      if (!agent) throw errors.notFound(`Agent ${request.params.chat_id}`);
      return { success: true as const, agent };
    },
  );

  app.post(
    '/agents/create',
    {
      config: { auth: 'either', permission: 'manage_agents' },
      schema: {
        tags,
        operationId: 'createAgent',
        summary: 'Create an onboarding agent (all onboarding identifiers null)',
        body: CreateAgentBody,
        response: { 201: AgentResult, ...errorResponses(400, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const caller = request.principal?.kind === 'session' ? request.principal.agent : undefined;
      if (caller && body.agent_rank && rankIndex(body.agent_rank) > rankIndex(caller.agent_rank)) {
        throw errors.forbidden('You cannot create an agent ranked above yourself', 'RANK_HIERARCHY');
      }
      const agent = await request.environment.db.transaction(async (tx) => {
        const created = await insertAgent(tx, body);
        if (!created) throw errors.conflict(`Agent ${body.chat_id} already exists`, 'DUPLICATE');
        const actor = actorOf(request);
        await recordAudit(tx, { actor, action: 'agent.created', target: created.chat_id, after: created, correlationId: request.id });
        await recordEvent(tx, { type: 'agent.created', actor, correlationId: request.id, after: created, data: { target: created.chat_id } });
        return created;
      });
      return reply.code(201).send({ success: true as const, agent });
    },
  );

  app.patch(
    '/agents/:chat_id/update',
    {
      // The dashboard path is require_admin(admin_agents), refused before the body is read; the key's is the bot's.
      config: { auth: 'either', admin: 'admin_agents' },
      schema: {
        tags,
        operationId: 'updateAgent',
        summary: 'Update an agent: bot path (API key) or dashboard path (admin_agents, reason required)',
        params: AgentParams,
        body: UpdateAgentBody,
        response: { 200: AgentResult, ...errorResponses(400, 404, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { reason, ...changes } = request.body;
      if (Object.keys(changes).length === 0) throw errors.validation('body has no field to update');
      const dashboard = request.principal?.kind === 'session';
      if (dashboard) {
        if (reason === undefined) throw errors.validation('body.reason is required');
      } else {
        if ('agent_rank' in changes) throw errors.validation('body.agent_rank cannot be changed by the bot');
        const refused = Object.keys(request.body).find((field) => !BOT_FIELDS.has(field));
        if (refused) throw errors.validation(`body.${refused} is not an accepted field for the bot`);
      }
      const agent = await request.environment.db.transaction(async (tx) => {
        const targetId = request.params.chat_id;
        const locked = dashboard ? await lockAdmins(tx, request, 'admin_agents', [targetId]) : await lockAgents(tx, [targetId]);
        const before = locked.get(targetId);
        if (!before) throw errors.notFound(`Agent ${targetId}`);
        if (dashboard) assertMayAdminister(locked.get(sessionAgent(request).chat_id)!, before, changes);
        const after = await updateAgent(tx, before.chat_id, changes);
        if (mayRemoveDirector(before, changes) && before.allowlisted) await assertDirectorRemains(tx);
        const actor = actorOf(request);
        await recordAudit(tx, { actor, action: 'agent.updated', target: before.chat_id, reason, before: agentOf(before), after, correlationId: request.id });
        await recordEvent(tx, {
          type: 'agent.updated', actor, correlationId: request.id, before: agentOf(before), after, data: { target: before.chat_id, reason: reason ?? null },
        });
        return after;
      });
      // Other instances hear the change through the database; this one forgets it right away.
      await afterCommit(request.environment, () => request.environment.sessions.invalidate(agent.chat_id));
      return { success: true as const, agent };
    },
  );
};

