// The admin audit list (spec: System administration, "Admin audit row"): newest first, filtered in
// SQL by actor, action or target, each filter served by an index in the list's own order
// (migrations/0011_admin_audit.sql).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { eventReportIds, lookupWithheldSql, shownAfterSql, shownLookupSql, visibleToSql } from '../platform/auth/report-access.js';
import type { Queryable } from '../platform/db/types.js';
import type { Principal } from '../platform/auth/principal.js';
import { readDb } from '../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses, nullableString, stringEnum, timestamp, pageOffset } from '../platform/http/schemas.js';

/** Spec Limits: GET /admin/audit answers at most 200 rows. */
const ADMIN_AUDIT_LIMIT = 200;

const AdminAuditQuery = Type.Object(
  {
    agent: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$', description: 'Chat id of the acting agent' })),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Exact action, e.g. admin.access_granted' })),
    target: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Exact target (a chat id, an action id, a report id)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ADMIN_AUDIT_LIMIT, default: 50 })),
    offset: Type.Optional(pageOffset({ default: 0 })),
  },
  { additionalProperties: false },
);

const AuditRow = Type.Object({
  id: Type.Integer(),
  actor_kind: stringEnum(['agent', 'bot', 'system', 'operator'] as const),
  actor_chat_id: nullableString(),
  actor_name: nullableString({ description: 'The acting agent’s current name' }),
  action: Type.String(),
  target: nullableString(),
  reason: nullableString(),
  before: Type.Unknown({ description: 'State before the change (JSON), or null' }),
  after: Type.Unknown({ description: 'State after the change (JSON), or null; a subject export or erasure without its total and counts below supervisor rank' }),
  correlation_id: Type.String(),
  created_at: timestamp(),
});

type AuditRow = Static<typeof AuditRow>;

const AdminAuditList = Type.Object({
  success: Type.Literal(true),
  total: Type.Integer({ description: 'Rows matching the filters in all' }),
  rows: Type.Array(AuditRow, { description: 'Newest first' }),
});

interface AuditFilters {
  agent?: string | undefined;
  action?: string | undefined;
  target?: string | undefined;
}

/**
 * An admin audit row is about the reports its canonical event is about (the event written with it,
 * same correlation id and name: report-access.ts decides from those reports' current flags).
 */
const aboutHiddenReport = (principal: Principal | null) => {
  const visible = visibleToSql(principal, eventReportIds('e'));
  return visible === 'true'
    ? undefined
    : `not exists (select 1 from events e where e.correlation_id = l.correlation_id and e.type = l.action and not (${visible}))`;
};

/** Only the filters given become predicates: each query then has one index to walk. */
function whereOf(filters: AuditFilters, principal: Principal | null): { where: string; values: string[] } {
  const clauses: string[] = [];
  const hidden = aboutHiddenReport(principal);
  if (hidden) clauses.push(hidden);
  const values: string[] = [];
  for (const [column, value] of [['l.actor_chat_id', filters.agent], ['l.action', filters.action], ['l.target', filters.target]] as const) {
    if (value === undefined) continue;
    values.push(value);
    clauses.push(`${column} = $${values.length}::text`);
  }
  // A row matches a filter only by what it shows: a lookup request whose target is withheld
  // (LOOKUP_TARGET) never matches one on its target (issue 38, review of 020e2e6).
  const withheld = LOOKUP_WITHHELD(principal);
  if (filters.target !== undefined && withheld !== 'false') clauses.push(`not ${withheld}`);
  return { where: clauses.length ? `where ${clauses.join(' and ')}` : '', values };
}

/** A lookup request's person (its target) is shown below supervisor rank only to who asked for it. */
const IS_LOOKUP_REQUEST = "l.action = 'discipline.user_lookup_requested'";
const LOOKUP_TARGET = (principal: Principal | null) => shownLookupSql(principal, IS_LOOKUP_REQUEST, 'l.actor_chat_id', 'l.target', 'null');
const LOOKUP_WITHHELD = (principal: Principal | null) => lookupWithheldSql(principal, IS_LOOKUP_REQUEST, 'l.actor_chat_id');

/** A subject's export or erasure row is shown without its counts below supervisor rank (report-access.ts). */
async function listAdminAudit(db: Queryable, principal: Principal | null, filters: AuditFilters, limit: number, offset: number) {
  const { where, values } = whereOf(filters, principal);
  const n = values.length;
  const [page, total] = await Promise.all([
    db.query<AuditRow>(
      `select l.id, l.actor_kind, l.actor_chat_id, a.name as actor_name, l.action, ${LOOKUP_TARGET(principal)} as target, l.reason, l.before,
              ${shownAfterSql(principal, 'l.action', 'l.after')} as after, l.correlation_id, l.created_at
       from audit_log l left join agents a on a.chat_id = l.actor_chat_id
       ${where} order by l.created_at desc, l.id desc limit $${n + 1}::int offset $${n + 2}::int`,
      [...values, limit, offset],
    ),
    db.query<{ total: number }>(`select count(*)::int as total from audit_log l ${where}`, values),
  ]);
  return { total: total.rows[0]!.total, rows: page.rows };
}

export const adminAuditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/audit',
    {
      config: { auth: 'session', admin: 'admin_audit' },
      schema: {
        tags: ['Administration'],
        operationId: 'listAdminAudit',
        summary: 'The admin audit trail, newest first; filters agent, action, target; at most 200 rows',
        querystring: AdminAuditQuery,
        response: { 200: AdminAuditList, ...errorResponses(400, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const { agent, action, target, limit, offset } = request.query;
      const result = await listAdminAudit(readDb(request), request.principal, { agent, action, target }, limit ?? 50, offset ?? 0);
      return { success: true as const, ...result };
    },
  );
};
