// One renderer for every error: {success:false, error:<message>, code?}. AppErrors keep their
// status; database errors go through the SQLSTATE map; Fastify's own 4xx errors are reworded to
// name the problem; anything else is a 500 that carries its message but never a stack.
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { DbError } from '../db/types.js';
import { AppError, errors, fromDbError } from '../errors.js';
import { describeValidationError } from './validation.js';

function toAppError(err: FastifyError | Error, contentType: string | undefined): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DbError) return fromDbError(err);
  const fe = err as FastifyError;
  if (fe.validation) return errors.validation(describeValidationError(fe.validationContext ?? 'request', fe.validation));
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(contentType?.split(';')[0]?.trim() || 'none');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.validation('Body is not valid JSON');
  }
  if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new AppError(fe.statusCode, fe.message, fe.code);
  }
  return errors.internal(err.message || 'Internal error');
}

export const errorHandlerPlugin = fp(
  async (app: FastifyInstance, { log }: { log: FastifyBaseLogger }) => {
    app.setErrorHandler((err: FastifyError | Error, request, reply) => {
      const appError = toAppError(err, request.headers['content-type']);
      const context = { request_id: request.id, method: request.method, url: request.url };
      if (appError.statusCode >= 500 && !appError.logged) log.error({ ...context, err }, appError.message);
      else log.info({ ...context, status: appError.statusCode, code: appError.code }, appError.message);
      const body: { success: false; error: string; code?: string } = { success: false, error: appError.message };
      if (appError.code) body.code = appError.code;
      if (appError.retryAfterSeconds !== undefined) reply.header('retry-after', String(appError.retryAfterSeconds));
      return reply.code(appError.statusCode).type('application/json; charset=utf-8').send(body);
    });
  },
  { name: 'error-handler' },
);

/** Unknown routes, answered in the API context so that they pass its hooks (host, body size). */
export function notFoundHandler(request: FastifyRequest): never {
  throw errors.routeNotFound(request.method, request.url.split('?')[0] ?? '/');
}
