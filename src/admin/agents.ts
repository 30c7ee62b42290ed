// Agent administration (spec: GET /admin/agents, PATCH /admin/agents/<chat_id>). The whitelist of
// `fields` is the dashboard's agent fields (docs/decisions.md); the rules run again inside the
// transaction on the locked caller and target rows (agents/administration.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { assertDirectorRemains, assertMayAdminister, changedFields, mayRemoveDirector, pick } from '../agents/administration.js';
import { agentColumns, agentOf, updateAgent, type AgentChanges, type AgentRow } from '../agents/queries.js';
import { Agent, AgentParams, AgentRank, AgentStatus } from '../agents/schemas.js';
import { sessionAgent } from '../platform/auth/guards.js';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses, nullableString } from '../platform/http/schemas.js';
import { AdminReason, CorrelationId } from './schemas.js';
import { lockAdmins, recordAdminChange } from './trail.js';
import { afterCommit } from '../platform/after-commit.js';

const tags = ['Administration'];

/** What an administrator may correct on an agent: everything but the identity and the timestamps. */
const AgentFields = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' })),
    status: Type.Optional(AgentStatus),
    agent_rank: Type.Optional(AgentRank),
    clearance_level: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    is_trainer: Type.Optional(Type.Boolean()),
    security_id: Type.Optional(nullableString({ minLength: 1, maxLength: 64 })),
    agreement_id: Type.Optional(nullableString({ pattern: '^AGM-[0-9]{5}$' })),
    agent_id: Type.Optional(nullableString({ pattern: '^SVC-AG-[0-9]{5}$' })),
    clearance_id: Type.Optional(nullableString({ pattern: '^CL-[0-9]{3}$' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

const PatchAgentBody = Type.Object({ fields: AgentFields, reason: AdminReason }, { additionalProperties: false });

/** An agent as everywhere else, with its allowlist flag. */
const AdminAgent = Type.Object({
  ...Agent.properties,
  allowlisted: Type.Boolean({ description: 'An active admin allowlist entry exists' }),
});

const AdminAgentList = Type.Object({ success: Type.Literal(true), agents: Type.Array(AdminAgent, { description: 'Newest first' }) });
const PatchAgentAnswer = Type.Object({
  success: Type.Literal(true),
  agent: Type.Ref('Agent'),
  changed: Type.Array(Type.String(), { description: 'The fields whose value changed (empty: nothing was written)' }),
  correlation_id: Type.Union([CorrelationId, Type.Null()], { description: 'Null when nothing changed' }),
});

export const adminAgentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/agents',
    {
      config: { auth: 'session', admin: 'admin_agents' },
      schema: { tags, operationId: 'listAgentsAsAdmin', summary: 'Every agent, with its allowlist flag', response: { 200: AdminAgentList, ...errorResponses(...COMMON_ERRORS) } },
    },
    async (request) => {
      const { rows } = await request.environment.db.query<AgentRow & { allowlisted: boolean }>(
        `select ${agentColumns('a')}, coalesce(l.active, false) as allowlisted
         from agents a left join admin_allowlist l on l.chat_id = a.chat_id order by a.created_at desc, a.creation_order desc`,
      );
      return { success: true as const, agents: rows };
    },
  );

  app.patch(
    '/admin/agents/:chat_id',
    {
      config: { auth: 'session', admin: 'admin_agents' },
      schema: {
        tags,
        operationId: 'updateAgentAsAdmin',
        summary: 'Change an agent: whitelisted fields and a reason',
        description:
          'Rank and clearance changes are Director-only; no self-modification; only targets at or below your rank. The rules are checked again on the locked rows.',
        params: AgentParams,
        body: PatchAgentBody,
        response: { 200: PatchAgentAnswer, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const targetId = request.params.chat_id;
      const { fields, reason } = request.body;
      const changes = fields as AgentChanges;
      const env = request.environment;
      const result = await env.db.transaction(async (tx) => {
        const locked = await lockAdmins(tx, request, 'admin_agents', [targetId]);
        const target = locked.get(targetId);
        if (!target) throw errors.notFound(`Agent ${targetId}`);
        assertMayAdminister(locked.get(sessionAgent(request).chat_id)!, target, changes);
        const changed = changedFields(target, changes);
        const before = agentOf(target);
        if (changed.length === 0) return { agent: before, changed, correlation_id: null };
        const after = await updateAgent(tx, targetId, Object.fromEntries(changed.map((f) => [f, changes[f]])) as AgentChanges);
        if (target.allowlisted && mayRemoveDirector(target, changes)) await assertDirectorRemains(tx);
        const correlationId = await recordAdminChange(tx, request, {
          action: 'admin.agent_updated',
          target: targetId,
          reason,
          before: pick(before, changed),
          after: pick(after, changed),
        });
        return { agent: after, changed, correlation_id: correlationId };
      });
      // Other instances hear the change through the database; this one forgets it right away.
      await afterCommit(env, () => env.sessions.invalidate(targetId));
      return { success: true as const, ...result };
    },
  );
};
