// The admin allowlist (spec: GET /admin/access, POST /admin/access/grant|revoke|remove): Director
// only. Grant creates or reactivates an entry, revoke keeps it listed as inactive, remove deletes
// it. A Director's entry is protected (403 DIRECTOR_PROTECTED), so the organisation always keeps
// its Directors on the list. The session cache hears each change through the allowlist trigger.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { LockedAgent } from '../agents/queries.js';
import { ChatId } from '../agents/schemas.js';
import { sessionAgent } from '../platform/auth/guards.js';
import { isDirector } from '../platform/auth/permissions.js';
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses, nullableString, timestamp } from '../platform/http/schemas.js';
import { AdminReason, CorrelationId } from './schemas.js';
import { lockAdmins, recordAdminChange, type AdminAction } from './trail.js';
import { afterCommit } from '../platform/after-commit.js';

const tags = ['Administration'];

const AccessEntry = Type.Object({
  chat_id: Type.String(),
  active: Type.Boolean(),
  granted_by: nullableString({ description: 'Chat id of the Director who last granted it (null: bootstrap or seed)' }),
  name: nullableString(),
  agent_rank: nullableString(),
  status: Type.String({ description: 'The agent’s status' }),
  created_at: timestamp(),
  updated_at: timestamp(),
});
type AccessEntry = Static<typeof AccessEntry>;

const AccessList = Type.Object({ success: Type.Literal(true), entries: Type.Array(AccessEntry, { description: 'Active first, then by name' }) });
const AccessBody = Type.Object({ chat_id: ChatId, reason: AdminReason }, { additionalProperties: false });
const AccessAnswer = Type.Object({
  success: Type.Literal(true),
  entry: Type.Union([AccessEntry, Type.Null()], { description: 'The entry after the change (null once removed)' }),
  correlation_id: CorrelationId,
});

const ENTRY_SELECT = `select l.chat_id, l.active, l.granted_by, a.name, a.agent_rank, a.status, l.created_at, l.updated_at
  from admin_allowlist l join agents a on a.chat_id = l.chat_id`;

async function findEntry(tx: Tx, chatId: string): Promise<AccessEntry | null> {
  const { rows } = await tx.query<AccessEntry>(`${ENTRY_SELECT} where l.chat_id = $1::text`, [chatId]);
  return rows[0] ?? null;
}

type Operation = 'grant' | 'revoke' | 'remove';
const ACTIONS: Record<Operation, AdminAction> = { grant: 'admin.access_granted', revoke: 'admin.access_revoked', remove: 'admin.access_removed' };

/** The change itself, on the locked target; throws the refusal that applies. */
async function apply(tx: Tx, operation: Operation, target: LockedAgent, grantedBy: string): Promise<void> {
  if (operation === 'grant') {
    if (target.allowlisted) throw errors.conflict(`Agent ${target.chat_id} already has admin access`, 'ALREADY_GRANTED');
    await tx.query(
      `insert into admin_allowlist (chat_id, active, granted_by) values ($1::text, true, $2::text)
       on conflict (chat_id) do update set active = true, granted_by = excluded.granted_by, updated_at = now()`,
      [target.chat_id, grantedBy],
    );
    return;
  }
  if (!target.listed) throw errors.notFound(`Agent ${target.chat_id} on the admin allowlist`);
  if (isDirector(target.agent_rank)) throw errors.forbidden('A Director cannot be revoked or removed from the admin allowlist', 'DIRECTOR_PROTECTED');
  if (operation === 'revoke') {
    if (!target.allowlisted) throw errors.conflict(`Agent ${target.chat_id}'s admin access is already revoked`, 'ALREADY_REVOKED');
    await tx.query('update admin_allowlist set active = false, updated_at = now() where chat_id = $1::text', [target.chat_id]);
    return;
  }
  await tx.query('delete from admin_allowlist where chat_id = $1::text', [target.chat_id]);
}

async function changeAccess(request: FastifyRequest<{ Body: Static<typeof AccessBody> }>, operation: Operation) {
  const { chat_id: chatId, reason } = request.body;
  const env = request.environment;
  const result = await env.db.transaction(async (tx) => {
    const locked = await lockAdmins(tx, request, 'admin_access', [chatId]);
    const target = locked.get(chatId);
    if (!target) throw errors.notFound(`Agent ${chatId}`);
    await apply(tx, operation, target, sessionAgent(request).chat_id);
    const entry = await findEntry(tx, chatId);
    const correlationId = await recordAdminChange(tx, request, {
      action: ACTIONS[operation],
      target: chatId,
      reason,
      // The locked row already says what the entry was.
      before: target.listed ? { active: target.allowlisted } : null,
      after: entry && { active: entry.active },
    });
    return { entry, correlation_id: correlationId };
  });
  await afterCommit(env, () => env.sessions.invalidate(chatId));
  return { success: true as const, ...result };
}

export const adminAccessRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/access',
    {
      config: { auth: 'session', admin: 'admin_access' },
      schema: { tags, operationId: 'listAdminAccess', summary: 'The admin allowlist (Director only)', response: { 200: AccessList, ...errorResponses(...COMMON_ERRORS) } },
    },
    async (request) => {
      const { rows } = await request.environment.db.query<AccessEntry>(`${ENTRY_SELECT} order by l.active desc, a.name nulls last, l.chat_id`);
      return { success: true as const, entries: rows };
    },
  );

  const summaries: Record<Operation, string> = {
    grant: 'Put an agent on the admin allowlist, or reactivate its entry',
    revoke: 'Deactivate an entry (it stays listed); a Director is protected',
    remove: 'Delete an entry; a Director is protected',
  };
  const operationIds: Record<Operation, string> = { grant: 'grantAdminAccess', revoke: 'revokeAdminAccess', remove: 'removeAdminAccess' };
  for (const operation of ['grant', 'revoke', 'remove'] as const) {
    app.post(
      `/admin/access/${operation}`,
      {
        config: { auth: 'session', admin: 'admin_access' },
        schema: {
          tags,
          operationId: operationIds[operation],
          summary: summaries[operation],
          body: AccessBody,
          response: { 200: AccessAnswer, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
        },
      },
      (request) => changeAccess(request, operation),
    );
  }
};
