// Punishment routes (spec: Punishments and discipline; Authentication 2-3: browser sessions only,
// the API key gets 403). Every handler first runs the expiry sweep, so no reader ever sees a
// punishment in force past its expires_at. The writes themselves are in writes.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { AppError, errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { countPunishments, findStoredProfile } from './changes.js';
import { expirePunishments } from './expiry.js';
import { listPunishments, loadPunishment, type Punishment } from './queries.js';
import {
  CreatePunishmentBody,
  ListQuery,
  ProfileParams,
  ProfileResult,
  PunishmentList,
  PunishmentParams,
  PunishmentResult,
  RevokeBody,
  SERVER_MANAGED_FIELDS,
  UpdatePunishmentBody,
} from './schemas.js';
import { assertUpdateBody, issuePunishment, revokeExisting, shownOrRefused, updatePunishment } from './writes.js';

const tags = ['Punishments'];

/**
 * Runs before body validation: a server-managed field is named as such rather than as unknown, and
 * a missing body reads as an empty one, so its first missing field is named ("body.reason is required").
 */
async function prepareBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {} as never;
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const field = SERVER_MANAGED_FIELDS.find((f) => Object.hasOwn(body, f));
  if (field !== undefined) throw errors.validation(`body.${field} is server-managed and cannot be set`);
}

/** A GET's punishment: one citing a report the caller may not see is refused as that report is. */
async function punishment(request: FastifyRequest, id: string): Promise<Punishment> {
  return shownOrRefused(await loadPunishment(request.environment.db, request.principal, id), id);
}

const sweep = (request: FastifyRequest) => expirePunishments(request.environment, request.id);

export const punishmentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/punishments',
    {
      config: { auth: 'session', permission: 'manage_punishments' },
      preValidation: prepareBody,
      schema: {
        tags,
        operationId: 'issuePunishment',
        summary: 'Issue a punishment: row, audit, punishment.issued event and the issue delivery (plus a user_lookup when no profile is stored that the issuer may see, unless it cites a supervisor-flagged report)',
        body: CreatePunishmentBody,
        response: { 201: PunishmentResult, ...errorResponses(400, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request, reply) => {
      await sweep(request);
      // Each write answers from inside its transaction (writes.ts answerOf).
      return reply.code(201).send({ success: true as const, punishment: await issuePunishment(request, request.body) });
    },
  );

  app.get(
    '/punishments',
    {
      config: { auth: 'session', permission: 'view_punishments' },
      schema: { tags, operationId: 'listPunishments', summary: 'Punishments, newest first, with the total matching', querystring: ListQuery, response: { 200: PunishmentList, ...errorResponses(400, ...COMMON_ERRORS) } },
    },
    async (request) => {
      await sweep(request);
      const db = request.environment.db;
      const { user_id, status, limit, offset } = request.query;
      const filter = { ...(user_id !== undefined ? { user_id } : {}), ...(status !== undefined ? { status } : {}) };
      const [count, punishments] = await Promise.all([countPunishments(db, request.principal, filter), listPunishments(db, request.principal, { ...filter, limit, offset })]);
      return { success: true as const, count, punishments };
    },
  );

  app.get(
    '/punishments/:punishment_id',
    {
      config: { auth: 'session', permission: 'view_punishments' },
      schema: { tags, operationId: 'getPunishment', summary: 'One punishment with its delivery state and stored profile', params: PunishmentParams, response: { 200: PunishmentResult, ...errorResponses(400, 404, ...COMMON_ERRORS) } },
    },
    async (request) => {
      await sweep(request);
      return { success: true as const, punishment: await punishment(request, request.params.punishment_id) };
    },
  );

  app.patch(
    '/punishments/:punishment_id',
    {
      config: { auth: 'session', permission: 'manage_punishments' },
      preValidation: prepareBody,
      schema: {
        tags,
        operationId: 'updatePunishment',
        summary: 'Change a punishment in force, with an audit reason; revoking has its own route',
        params: PunishmentParams,
        body: UpdatePunishmentBody,
        response: { 200: PunishmentResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = request.params.punishment_id;
      assertUpdateBody(id, request.body);
      await sweep(request);
      return { success: true as const, punishment: await updatePunishment(request, id, request.body) };
    },
  );

  app.post(
    '/punishments/:punishment_id/revoke',
    {
      config: { auth: 'session', permission: 'manage_punishments' },
      preValidation: prepareBody,
      schema: {
        tags,
        operationId: 'revokePunishment',
        summary: 'Revoke a punishment in force: audit, punishment.revoked event and the revoke delivery',
        params: PunishmentParams,
        body: RevokeBody,
        response: { 200: PunishmentResult, ...errorResponses(400, 404, 409, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      await sweep(request);
      return { success: true as const, punishment: await revokeExisting(request, request.params.punishment_id, request.body.reason) };
    },
  );

  app.get(
    '/punishments/users/:chat_id/profile',
    {
      config: { auth: 'session', permission: 'view_punishments' },
      schema: { tags, operationId: 'getChatProfile', summary: "The user's stored chat profile snapshot", params: ProfileParams, response: { 200: ProfileResult, ...errorResponses(400, 404, ...COMMON_ERRORS) } },
    },
    async (request) => {
      await sweep(request);
      const profile = await findStoredProfile(request.environment.db, request.principal, request.params.chat_id);
      if (!profile) throw new AppError(404, `No stored profile for user ${request.params.chat_id}`, 'PROFILE_NOT_FOUND');
      return { success: true as const, profile };
    },
  );
};
