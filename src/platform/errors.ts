// One error type, a catalogue of factories, and the single SQLSTATE mapping. Handlers throw these;
// the error handler (error-handler.ts) renders every one as {success:false, error, code?}.
import { DbError } from './db/types.js';

export interface AppErrorOptions {
  cause?: unknown;
  /** Sent as the Retry-After header (seconds). */
  retryAfterSeconds?: number;
  /** Already logged where it was raised (once per change, not per request): the handler logs it at info. */
  logged?: boolean;
  /** Never the answer (an Idempotency-Key's verdict replaces it, idempotency.ts): not logged at all. */
  silent?: boolean;
}

export class AppError extends Error {
  readonly retryAfterSeconds: number | undefined;
  readonly logged: boolean;
  readonly silent: boolean;

  constructor(
    readonly statusCode: number,
    message: string,
    readonly code?: string,
    options?: AppErrorOptions,
  ) {
    super(message, options);
    this.name = 'AppError';
    this.retryAfterSeconds = options?.retryAfterSeconds;
    this.logged = options?.logged ?? false;
    this.silent = options?.silent ?? false;
  }
}

export const errors = {
  validation: (message: string) => new AppError(400, message, 'VALIDATION_ERROR'),
  /** A pseudonym names an erased person, never a chat account: the bot must never be sent after one (issue 39). */
  pseudonymTarget: (field: string, value: string) => new AppError(400, `${field} ${value} is the pseudonym of an erased person, not a chat id`, 'VALIDATION_ERROR'),
  bodyRequired: () => new AppError(400, 'body is required: this operation takes a JSON object', 'VALIDATION_ERROR'),
  badRequest: (message: string, code = 'BAD_REQUEST') => new AppError(400, message, code),
  badUrl: () => new AppError(400, 'The URL has malformed percent-encoding', 'BAD_URL'),
  methodNotAllowed: (method: string, instead: string) => new AppError(405, `${method} is not allowed here: use ${instead}`, 'METHOD_NOT_ALLOWED'),
  duplicateHost: () => new AppError(400, 'The request has more than one Host header', 'DUPLICATE_HOST'),
  pathParameterTooLong: (max: number) => new AppError(414, `A path parameter is longer than ${max} characters`, 'URI_TOO_LONG'),
  requestTimeout: () => new AppError(408, 'The request was not received in time', 'REQUEST_TIMEOUT'),
  headersTooLarge: (maxBytes: number) =>
    new AppError(431, `The request line and headers are larger than ${maxBytes / 1024} KiB`, 'HEADERS_TOO_LARGE'),
  unauthorized: (message = 'Authentication required') => new AppError(401, message, 'UNAUTHORIZED'),
  forbidden: (message: string, code = 'FORBIDDEN') => new AppError(403, message, code),
  insufficientClearance: () => new AppError(403, 'Insufficient clearance', 'INSUFFICIENT_CLEARANCE'),
  trainerRequired: () => new AppError(403, 'Trainers only: the is_trainer flag or supervisor rank', 'TRAINER_REQUIRED'),
  keyRequired: () =>
    new AppError(401, "This route takes the bot's API key in the Authorization header; a browser session is not a credential here", 'KEY_REQUIRED'),
  sessionRequired: () => new AppError(403, 'This route needs a signed-in agent; the API key is not accepted here', 'SESSION_REQUIRED'),
  notFound: (what: string) => new AppError(404, `${what} not found`, 'NOT_FOUND'),
  routeNotFound: (method: string, url: string) => new AppError(404, `Route ${method} ${url} not found`, 'NOT_FOUND'),
  conflict: (message: string, code = 'CONFLICT') => new AppError(409, message, code),
  actionNotFound: (id: number | string) => new AppError(404, `Queue action ${id} not found`, 'ACTION_NOT_FOUND'),
  actionAlreadyCompleted: (id: number | string, status: string) =>
    new AppError(409, `Queue action ${id} is already completed (status ${status})`, 'ACTION_ALREADY_COMPLETED'),
  deliveryNotFound: (id: number | string) => new AppError(404, `Discipline item ${id} not found`, 'DISCIPLINE_NOT_FOUND'),
  disciplineAlreadyCompleted: (id: number | string, status: string) =>
    new AppError(409, `Discipline item ${id} is already completed (status ${status})`, 'DISCIPLINE_ALREADY_COMPLETED'),
  unknownHost: () =>
    new AppError(421, 'This host is not served here: it resolves to no environment', 'UNKNOWN_HOST'),
  payloadTooLarge: () => new AppError(413, 'Request body is larger than 1 MiB', 'PAYLOAD_TOO_LARGE'),
  unsupportedMediaType: (type: string) => new AppError(415, `Unsupported Media Type: ${type}`, 'UNSUPPORTED_MEDIA_TYPE'),
  shuttingDown: () => new AppError(503, 'This instance is shutting down: retry on another', 'SHUTTING_DOWN'),
  notReady: (what: string) => new AppError(503, `Not ready: ${what}`, 'NOT_READY'),
  environmentUnavailable: (name: string) =>
    new AppError(503, `Environment unavailable: ${name}`, 'ENVIRONMENT_UNAVAILABLE'),
  notConfigured: (integration: string) =>
    new AppError(503, `${integration} is not configured`, 'NOT_CONFIGURED'),
  internal: (message: string) => new AppError(500, message, 'INTERNAL_ERROR'),
  tooManyConnections: (perAddress: number) =>
    new AppError(429, `This address holds ${perAddress} realtime connections to this instance already: close one first`, 'TOO_MANY_CONNECTIONS'),
  realtimeAtCapacity: () => new AppError(503, 'This instance holds all the realtime connections it may: retry later or on another instance', 'REALTIME_AT_CAPACITY'),
  rateLimited: (what: string, retryAfterSeconds: number) =>
    new AppError(429, `Too many ${what} from this address: retry in ${retryAfterSeconds} s`, 'RATE_LIMITED', { retryAfterSeconds }),
};

// SQLSTATE codes (PostgreSQL Appendix A) that mean something to a caller.
const SQLSTATE = {
  UNIQUE_VIOLATION: '23505',
  FOREIGN_KEY_VIOLATION: '23503',
  NOT_NULL_VIOLATION: '23502',
  CHECK_VIOLATION: '23514',
  STRING_TOO_LONG: '22001',
  INVALID_TEXT_REPRESENTATION: '22P02',
  NUMERIC_OUT_OF_RANGE: '22003',
  INVALID_DATETIME: '22007',
  DATETIME_OUT_OF_RANGE: '22008',
  SERIALIZATION_FAILURE: '40001',
  DEADLOCK_DETECTED: '40P01',
  LOCK_NOT_AVAILABLE: '55P03',
  QUERY_CANCELED: '57014',
  READ_ONLY_SQL_TRANSACTION: '25006',
  ADMIN_SHUTDOWN: '57P01',
  CRASH_SHUTDOWN: '57P02',
  CANNOT_CONNECT_NOW: '57P03',
  /** The server's max_connections (or a role's or database's limit) reached: a full server. */
  TOO_MANY_CONNECTIONS: '53300',
} as const;

// A server not reachable now (issue 40: a name the resolver cannot answer for yet, a network down).
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN']);

/** The server could not be reached, or the connection to it was lost (class 08): not a refusal by it. */
export const cannotReachServer = (err: DbError): boolean => err.code !== undefined && (err.code.startsWith('08') || CONNECTION_ERRNOS.has(err.code));

/** The one place a database failure becomes an HTTP answer. */
export function fromDbError(err: DbError): AppError {
  const detail = err.detail ? `${err.message} (${err.detail})` : err.message;
  switch (err.code) {
    case SQLSTATE.UNIQUE_VIOLATION:
      return new AppError(409, `Already exists: ${detail}`, 'DUPLICATE', { cause: err });
    case SQLSTATE.FOREIGN_KEY_VIOLATION:
      return new AppError(409, `Referenced record missing or still in use: ${detail}`, 'REFERENCE_CONFLICT', { cause: err });
    case SQLSTATE.NOT_NULL_VIOLATION:
    case SQLSTATE.CHECK_VIOLATION:
    case SQLSTATE.STRING_TOO_LONG:
    case SQLSTATE.INVALID_TEXT_REPRESENTATION:
    case SQLSTATE.NUMERIC_OUT_OF_RANGE:
    case SQLSTATE.INVALID_DATETIME:
    case SQLSTATE.DATETIME_OUT_OF_RANGE:
      return new AppError(400, `Invalid value: ${detail}`, 'VALIDATION_ERROR', { cause: err });
    case SQLSTATE.SERIALIZATION_FAILURE:
    case SQLSTATE.DEADLOCK_DETECTED:
    case SQLSTATE.LOCK_NOT_AVAILABLE:
      return new AppError(409, `Conflicting concurrent change, try again: ${err.message}`, 'CONCURRENT_CHANGE', { cause: err });
  }
  const unavailable =
    cannotReachServer(err) ||
    // A server that refuses writes (a standby, a primary made read-only) or is shutting down: the
    // write may succeed on the next connection, which chooses its host again (issue 30).
    err.code === SQLSTATE.READ_ONLY_SQL_TRANSACTION ||
    err.code === SQLSTATE.ADMIN_SHUTDOWN ||
    err.code === SQLSTATE.CRASH_SHUTDOWN ||
    err.code === SQLSTATE.CANNOT_CONNECT_NOW ||
    err.code === SQLSTATE.TOO_MANY_CONNECTIONS ||
    err.code === SQLSTATE.QUERY_CANCELED;
  if (unavailable) return new AppError(503, `Database unavailable: ${err.message}`, 'DATABASE_UNAVAILABLE', { cause: err });
  return new AppError(500, `Database error: ${detail}`, 'DATABASE_ERROR', { cause: err });
}
