// Generators and the timestamp utility (spec: Generators and utilities). Key only.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { generateId, ID_FORMATS, ID_KINDS, type IdKind } from '../platform/ids.js';
import { GeneratedId, TimestampBody, TimestampResult } from './schemas.js';
import { parseDateString } from './timestamp.js';

const GENERATOR_OPERATION_IDS: Record<IdKind, string> = {
  agreement: 'generateAgreementId',
  agent: 'generateAgentId',
  join: 'generateJoinId',
  case: 'generateCaseId',
  investigation: 'generateInvestigationId',
  clearance: 'generateClearanceId',
};

export const utilitiesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // GET /generate/agreement, /agent, /join, /case, /investigation, /clearance
  for (const kind of ID_KINDS) {
    app.get(
      `/generate/${kind}`,
      {
        config: { auth: 'key' },
        schema: {
          tags: ['Generators and utilities'],
          operationId: GENERATOR_OPERATION_IDS[kind],
          summary: `A random ${kind} id (${ID_FORMATS[kind]}, # a digit)`,
          response: { 200: GeneratedId, ...errorResponses(...COMMON_ERRORS) },
        },
      },
      async () => ({ success: true as const, id: generateId(kind) }),
    );
  }

  app.post(
    '/util/timestamp',
    {
      // A conversion: it changes nothing, so it takes no Idempotency-Key (and needs no database).
      config: { auth: 'key', changes: false },
      schema: {
        tags: ['Generators and utilities'],
        operationId: 'convertTimestamp',
        summary: 'Convert a JavaScript Date string to a Unix timestamp',
        body: TimestampBody,
        response: { 200: TimestampResult, ...errorResponses(400, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const timestamp = parseDateString(request.body.date);
      if (timestamp === undefined) {
        throw errors.validation(
          'body.date is not a JavaScript Date string such as "Sat Nov 21 2026 11:04:39 GMT+0100 (Central European Standard Time)"',
        );
      }
      return { success: true as const, timestamp };
    },
  );
};
