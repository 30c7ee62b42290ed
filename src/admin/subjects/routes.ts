// What is held about a person, and its erasure (issue 32): GET /admin/subjects/<chat_id> and
// POST /admin/subjects/<chat_id>/erase, Director on the admin allowlist. The CLI's subject-export
// and subject-erase (src/cli-subjects.ts) run the same functions.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ChatId } from '../../agents/schemas.js';
import { actorOf } from '../../platform/http/request-context.js';
import { COMMON_ERRORS, errorResponses } from '../../platform/http/schemas.js';
import { AdminReason, CorrelationId } from '../schemas.js';
import { lockAdmins } from '../trail.js';
import { eraseSubject } from './erase.js';
import { exportSubject } from './export.js';
import { environmentPseudonymKey } from './subject-key.js';

const tags = ['Administration'];
// admin_access: Director only, on the active allowlist (guards.ts), like the allowlist itself.
const access = { auth: 'session', admin: 'admin_access' } as const;

const SubjectParams = Type.Object({ chat_id: ChatId }, { additionalProperties: false });

const ExportedRow = Type.Object({
  id: Type.String({ description: "The row's id in its table" }),
  at: Type.Union([Type.String(), Type.Null()], { description: 'When the row was written (or last changed, for a chat profile)' }),
  row: Type.Record(Type.String(), Type.Unknown(), { description: "The row as stored, other people's identities and words replaced by [withheld]" }),
});
const WithheldCounts = Type.Object(
  { other_people: Type.Optional(Type.Integer()), staff: Type.Optional(Type.Integer()), contact_of_others: Type.Optional(Type.Integer()) },
  { additionalProperties: false },
);
const SubjectExport = Type.Object({
  success: Type.Literal(true),
  chat_id: Type.String(),
  exported_at: Type.String(),
  correlation_id: CorrelationId,
  total: Type.Integer({ description: 'Rows in all kinds' }),
  kinds: Type.Record(Type.String(), Type.Array(ExportedRow), { description: 'Every kind of the personal-data catalogue, each with the rows naming the person' }),
  withheld: Type.Object(
    {
      total: Type.Integer({ description: 'Values withheld in all' }),
      rows_withheld_whole: Type.Integer({ description: 'Rows not shown at all (contact threads between another reporter and staff)' }),
      kinds: Type.Record(Type.String(), WithheldCounts, { description: 'Values withheld per kind and reason' }),
      why: Type.String(),
    },
    { description: "Other people's identities and words withheld from the export (GDPR article 15(4))" },
  ),
});

const EraseBody = Type.Object(
  {
    reason: AdminReason,
    reference: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: "The request's reference in the organisation's records (e.g. GDPR-2026-001)" }),
  },
  { additionalProperties: false },
);
const ErasureAnswer = Type.Object({
  success: Type.Literal(true),
  erasure_id: Type.Union([Type.String(), Type.Null()], { description: 'Null when nothing named the person any more (a second erasure): nothing was written' }),
  pseudonym: Type.String({ description: 'What their chat id became in every row' }),
  reference: Type.String(),
  counts: Type.Record(Type.String(), Type.Integer(), { description: 'Rows changed per table (chat profiles: deleted)' }),
  correlation_id: Type.Union([CorrelationId, Type.Null()]),
});

export const adminSubjectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/subjects/:chat_id',
    {
      config: access,
      schema: {
        tags,
        operationId: 'exportSubject',
        summary: 'Everything held about a chat id, grouped by kind (subject access; Director); admin-audited',
        params: SubjectParams,
        response: { 200: SubjectExport, ...errorResponses(400, ...COMMON_ERRORS) },
      },
    },
    async (request) =>
      request.environment.db.transaction(async (tx) => {
        await lockAdmins(tx, request, 'admin_access');
        return exportSubject(tx, request.params.chat_id, actorOf(request), request.id);
      }),
  );

  app.post(
    '/admin/subjects/:chat_id/erase',
    {
      // Its answer names the pseudonym, its request the chat id: kept for a retry, the pair would
      // outlive the erasure in idempotency_keys. A retry runs again and finds nothing left.
      config: { ...access, keepsAnswer: false },
      schema: {
        tags,
        operationId: 'eraseSubject',
        summary: "Erase a person's personal data everywhere (Director): names and words to a marker, chat id to a pseudonym; 409 PUNISHMENT_IN_FORCE",
        params: SubjectParams,
        body: EraseBody,
        response: { 200: ErasureAnswer, ...errorResponses(400, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const db = request.environment.db;
      const key = await environmentPseudonymKey(request.environment);
      const actor = actorOf(request);
      if (actor.kind !== 'agent') throw new Error('a session route without an agent');
      return db.transaction(async (tx) => {
        await lockAdmins(tx, request, 'admin_access');
        return eraseSubject(tx, key, { chatId: request.params.chat_id, ...request.body, actor, correlationId: request.id });
      });
    },
  );
};
