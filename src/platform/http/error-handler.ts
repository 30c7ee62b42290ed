// One renderer for every error: {success:false, error:<message>, code?}. AppErrors keep their
// status; database errors go through the SQLSTATE map; Fastify's own 4xx errors are reworded to
// name the problem; anything else is a 500 that carries its message but never a stack. The same
// envelope is written for what the framework answers before routing (frameworkErrors: a bad
// percent-encoding, an over-long path parameter) and for what Node's HTTP parser refuses on the
// socket (clientErrorHandler: headers over the limit, a request not received in time).
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { RESOLUTION_UNKNOWN } from '../db/commit.js';
import { DbError } from '../db/types.js';
import { AppError, errors, fromDbError } from '../errors.js';
import { redactUrl } from './request-log.js';
import { describeValidationError } from './validation.js';

/** Fastify's maxParamLength (its default): a longer path parameter is 414. */
export const MAX_PARAM_LENGTH = 100;

function toAppError(err: FastifyError | Error, request: FastifyRequest): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DbError) return fromDbError(err);
  const fe = err as FastifyError;
  if (fe.validation) {
    // Fastify validates a body never sent (no Content-Type, or an empty JSON body: json-body.ts)
    // as null, and "body must be object" would blame a value the caller did not send.
    if (fe.validationContext === 'body' && request.body === undefined) return errors.bodyRequired();
    return errors.validation(describeValidationError(fe.validationContext ?? 'request', fe.validation));
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(request.headers['content-type']?.split(';')[0]?.trim() || 'none');
    // An empty JSON body never reaches Fastify's parser (json-body.ts): it is no body.
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.validation('Body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('The body is not as long as its Content-Length says');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_INVALID_URL':
      return errors.badUrl();
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errors.pathParameterTooLong(MAX_PARAM_LENGTH);
  }
  // Any other client error (a body stream aborted, a plugin's refusal): the status stays, the
  // words are ours, Fastify's message and code are not part of the API.
  if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new AppError(fe.statusCode, `The request could not be read (${STATUS_CODES[fe.statusCode] ?? 'client error'})`, 'BAD_REQUEST');
  }
  return errors.internal(err.message || 'Internal error');
}

export interface ErrorHandling {
  /** The error handler, also given to Fastify as `frameworkErrors`. */
  handle(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply;
  /** The handler's logging alone, for an error answered outside it (an Idempotency-Key's failed commit). */
  log(appError: AppError, request: FastifyRequest, err?: unknown): void;
  /** onResponse: a success on an environment that was down ends its outage (logged once). */
  noteRecovery(request: FastifyRequest, reply: FastifyReply): void;
}

/**
 * The renderer and its logging. A 500 is logged at error with its stack; a 503 never carries a
 * stack, and an unreachable database is logged once when an environment goes down and once when
 * a request succeeds there again, not per request (a 10 s outage answered thousands of them).
 */
export function createErrorHandling(log: FastifyBaseLogger): ErrorHandling {
  const down = new Set<string>();
  const logError = (appError: AppError, request: FastifyRequest, err: unknown = appError): void => {
    const context = { request_id: request.id, method: request.method, url: redactUrl(request.url) };
    const status = appError.statusCode;
    const environment = (request.environment as { name?: string } | null)?.name;
    if (appError.silent) {
      // Replaced by what an Idempotency-Key decided: the answer is logged as what it is.
    } else if (appError.cause instanceof DbError && appError.cause.code === RESOLUTION_UNKNOWN) {
      // The database answers, but a commit's outcome is not known (the synchronous standby did not
      // acknowledge it): said for each, and no outage.
      log.warn({ ...context, status, code: appError.code }, appError.message);
    } else if (appError.code === 'DATABASE_UNAVAILABLE' && environment !== undefined) {
      if (!down.has(environment)) {
        down.add(environment);
        log.warn({ ...context, environment, code: appError.code }, `${environment} database unreachable: answering 503 until it is back (${appError.message})`);
      } else log.debug({ ...context, status, code: appError.code }, appError.message);
    } else if (status === 503) {
      // Environments logs its own outage once; a 503 is a state, never a stack.
      log.debug({ ...context, status, code: appError.code }, appError.message);
    } else if (status >= 500 && !appError.logged) log.error({ ...context, err }, appError.message);
    else log.info({ ...context, status, code: appError.code }, appError.message);
  };
  return {
    log: logError,
    handle(err, request, reply) {
      const appError = toAppError(err, request);
      const status = appError.statusCode;
      logError(appError, request, err);
      const body: { success: false; error: string; code?: string } = { success: false, error: appError.message };
      if (appError.code) body.code = appError.code;
      if (appError.retryAfterSeconds !== undefined) reply.header('retry-after', String(appError.retryAfterSeconds));
      // Framework errors arrive before the request-context hook and the security headers' own
      // (security-headers.ts): the id and nosniff are set here too.
      reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
      return reply.code(status).type('application/json; charset=utf-8').send(body);
    },
    noteRecovery(request, reply) {
      if (down.size === 0 || reply.statusCode >= 400) return;
      const environment = (request.environment as { name?: string } | null)?.name;
      if (environment === undefined || !down.delete(environment)) return;
      log.warn({ environment }, `${environment} database reachable again`);
    },
  };
}

export const errorHandlerPlugin = fp(
  async (app: FastifyInstance, { handling }: { handling: ErrorHandling }) => {
    app.setErrorHandler((err: FastifyError | Error, request, reply) => handling.handle(err, request, reply));
    app.addHook('onResponse', async (request, reply) => handling.noteRecovery(request, reply));
  },
  { name: 'error-handler' },
);

/**
 * Node's HTTP parser refuses some requests before Fastify sees them ('clientError'): headers over
 * its limit (431), a request not received within the request or headers timeout (408), bytes that
 * are not HTTP (400). The answer is written to the socket in the envelope, then the socket closed.
 */
export function createClientErrorHandler(log: FastifyBaseLogger) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const appError =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? errors.requestTimeout()
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? errors.headersTooLarge(maxHeaderSize)
          : errors.badRequest('The request is not well-formed HTTP');
    log.info({ status: appError.statusCode, code: appError.code, reason: err.code }, appError.message);
    // Node's own rule: answer only when no response has begun on this socket.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const body = JSON.stringify({ success: false, error: appError.message, code: appError.code });
      socket.write(
        `HTTP/1.1 ${appError.statusCode} ${STATUS_CODES[appError.statusCode]}\r\n` +
          `Connection: close\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}

/** Unknown routes, answered in the API context so that they pass its hooks (host, body size). */
export function notFoundHandler(request: FastifyRequest): never {
  throw errors.routeNotFound(request.method, request.url.split('?')[0] ?? '/');
}
