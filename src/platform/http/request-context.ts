// Everything a request passes before its handler, in order: request id, body size, body type,
// environment (from the Host header, fail closed) and credentials (what the route declares).
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Principal } from '../auth/principal.js';
import { adminRefusal, type AdminCapability } from '../auth/guards.js';
import { hasPermission, hasRank, isTrainer, type Permission, type Rank } from '../auth/permissions.js';
import { assertMayUpdateReport, assertMayWorkOnReport, findReportAccessFacts, type ReportWork } from '../auth/report-access.js';
import { findSessionAgent, hashToken, SESSION_COOKIE, type SessionAgent } from '../auth/sessions.js';
import { recordPosition } from '../db/replicas.js';
import { DbError, type QueryOptions, type Queryable } from '../db/types.js';
import type { Environment, Environments } from '../environments.js';
import { cannotReachServer, errors } from '../errors.js';
import type { Actor } from '../events.js';

export const BODY_LIMIT = 1024 * 1024;

/** What a route accepts: the bot's API key, a browser session, either, or no credential. */
export type AuthMode = 'key' | 'session' | 'either' | 'none';


declare module 'fastify' {
  interface FastifyContextConfig {
    /** Required on every route: checked when the route is added. */
    auth?: AuthMode;
    permission?: Permission;
    /**
     * require_admin (spec Authentication 7) for an administration route: checked before the body
     * is read, against the session row read live (never the session cache), so a grant, revoke
     * or demotion applies to the very next admin request on every instance.
     */
    admin?: AdminCapability;
    /** A rank sessions need on top of the permission (spec Authentication 6), whatever the data. */
    rank?: Rank;
    /** Trainers only (spec: "trainer" access): the is_trainer flag or supervisor rank, else 403 TRAINER_REQUIRED. */
    trainer?: boolean;
    /**
     * The caller's part in the training session named by the `session_id` path parameter: its
     * assigned trainer, or either member (src/training/session-access.ts memberGate, before the
     * body is validated).
     */
    member?: 'trainer' | 'participant';
    /**
     * The work a session does on the report named by the `report_id` path parameter
     * (report-access.ts), or how the body names it: asked of the report's current row before the
     * body is validated, so a refused caller learns nothing of the body's shape; the handler asks
     * again under the row lock.
     */
    report?: ReportWork | ((body: Record<string, unknown>) => ReportWork);
    /** Opt in to application/x-www-form-urlencoded bodies (report creation). */
    acceptsForm?: boolean;
    /**
     * Whether the operation changes data, when its method does not say so: true for a GET that
     * does (a queue pickup claims an item), false for a POST that does not (a timestamp
     * conversion). One that changes data records its caller's read position, so that caller's
     * next reads see the change, and takes an Idempotency-Key (idempotency.ts).
     */
    changes?: boolean;
    /**
     * false: an Idempotency-Key still serialises retries, but the answer is not kept for them (a
     * subject erasure's answer would link the erased chat id in its request to its pseudonym).
     */
    keepsAnswer?: false;
    /**
     * true: with an Idempotency-Key the handler runs before its key is looked up, which its first
     * statement does, as a claiming GET's (idempotency.ts): for a handler that must act before its
     * transaction takes a connection (a schema reload drops the prepared statements first).
     */
    keyLookedUpLate?: true;
  }
  interface FastifyRequest {
    /** The resolved environment (every route of the API context has one). */
    environment: Environment;
    principal: Principal | null;
  }
}

const FORM = 'application/x-www-form-urlencoded';

export interface RequestContextOptions {
  environments: Environments;
  /** Origins whose state-changing session requests are accepted (dashboard and training). */
  allowedOrigins: ReadonlySet<string>;
  /** Some environment has read replicas: changing requests record their caller's read position. */
  replicated?: boolean;
  /**
   * The root logger: a request's own (request.log) logs nothing when request logging is off (a
   * level above info), and what is logged here is a problem at any level.
   */
  log: FastifyBaseLogger;
}

export function actorOf(request: FastifyRequest): Actor {
  const principal = request.principal;
  if (principal?.kind === 'session') return { kind: 'agent', chatId: principal.agent.chat_id, name: principal.agent.name };
  if (principal?.kind === 'key') return { kind: 'bot' };
  return { kind: 'system' };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether an operation changes data: as its method says, unless its route's `config.changes` says otherwise. */
export const changesState = (method: string, changes: boolean | undefined): boolean => changes ?? !SAFE_METHODS.has(method);

/** Who a read position belongs to: one browser session, or the bot's key (either of its keys). */
function callerOf(request: FastifyRequest): string | undefined {
  const principal = request.principal;
  if (principal?.kind === 'key') return 'key';
  if (principal?.kind === 'session') return `session:${hashToken(principal.token)}`;
  return undefined;
}

const readPositions = new WeakMap<FastifyRequest, Promise<bigint>>();

export interface ReadOptions {
  /**
   * Everything committed before this read began, not only the caller's own changes: for reads a
   * client makes on hearing a realtime broadcast (training sessions), whose change another caller
   * committed moments ago. The primary's current WAL position replaces the caller's.
   */
  latest?: boolean;
}

/**
 * Where a route's reads go when they tolerate replication (lists, details, searches: issue 22):
 * a replica that has replayed the caller's last change, else the primary. The environment's Db
 * itself when it has no replicas. Everything that decides a write reads `environment.db`.
 */
export function readDb(request: FastifyRequest, options: ReadOptions = {}): Queryable {
  const environment = request.environment;
  const replicas = environment.replicas;
  if (replicas === undefined) return environment.db;
  const caller = callerOf(request);
  // The position once per request, however many statements it reads.
  const position = () => {
    let found = readPositions.get(request);
    if (!found) {
      found = options.latest ? replicas.latestPosition(environment.db) : replicas.positionOf(environment.db, caller);
      readPositions.set(request, found);
    }
    return found;
  };
  return {
    query: async <R>(text: string, values?: readonly unknown[], queryOptions?: QueryOptions) => replicas.query<R>(await position(), text, values, queryOptions),
    exec: (sql) => environment.db.exec(sql),
  };
}

const announcesOversizedBody = (request: FastifyRequest) => Number(request.headers['content-length'] ?? 0) > BODY_LIMIT;

/** 413 before reading a body that announces more than 1 MiB (chunked bodies: the parser's limit). */
export function refuseOversizedBody(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  done(announcesOversizedBody(request) ? errors.payloadTooLarge() : undefined);
}

/**
 * Two Host headers are refused, whatever they say: Node keeps the first, a proxy in front may have
 * routed by the other, and the environment is chosen by the host (root onRequest hook).
 */
export function refuseDuplicateHost(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const raw = request.raw.rawHeaders;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') hosts++;
  done(hosts > 1 ? errors.duplicateHost() : undefined);
}

async function resolveEnvironment(environments: Environments, request: FastifyRequest): Promise<void> {
  const name = environments.resolveHost(request.host);
  if (name === undefined) throw errors.unknownHost();
  const environment = environments.get(name);
  if (environment === undefined) throw errors.environmentUnavailable(name);
  request.environment = environment;
}

async function resolveSession(environment: Environment, token: string, live: boolean): Promise<SessionAgent | undefined> {
  if (live) return findSessionAgent(environment.db, environment.name, token);
  const tokenHash = hashToken(token);
  const cached = environment.sessions.get(tokenHash);
  if (cached) return cached;
  const mark = environment.sessions.mark();
  const session = await findSessionAgent(environment.db, environment.name, token);
  if (session) environment.sessions.store(tokenHash, session, mark);
  return session;
}

/** What a request with an accepted credential is answered with, refusals included: no cache keeps it. */
const authenticated = (reply: FastifyReply) => void reply.header('cache-control', 'no-store');

async function authenticate(request: FastifyRequest, reply: FastifyReply, allowedOrigins: ReadonlySet<string>): Promise<void> {
  const { auth, permission, admin } = request.routeOptions.config;
  if (auth === undefined || auth === 'none') return;
  const header = request.headers.authorization;
  if (header !== undefined) {
    // The current key or, during a rotation, the previous one: the same principal either way.
    if (!request.environment.apiKeys.matches(header)) throw errors.unauthorized('Invalid API key');
    authenticated(reply);
    if (auth === 'session') throw errors.sessionRequired();
    // The key holds every permission on the routes that accept it (DESIGN.md): config.permission
    // constrains sessions only.
    request.principal = { kind: 'key' };
    return;
  }
  const token = request.cookies[SESSION_COOKIE];
  if (token === undefined) throw errors.unauthorized();
  // On a key-only route only the key is a credential (spec Authentication 3: 401): a session
  // cookie, live or not, is refused as missing the key, without looking it up.
  if (auth === 'key') throw errors.keyRequired();
  const session = await resolveSession(request.environment, token, admin !== undefined);
  if (session === undefined) throw errors.unauthorized('Session expired or not valid here: sign in again');
  authenticated(reply);
  const { agent, allowlisted } = session;
  // A cookie rides along on cross-site requests; a state change from a foreign page is refused.
  const origin = request.headers.origin;
  if (!SAFE_METHODS.has(request.method) && origin !== undefined && !allowedOrigins.has(origin)) {
    throw errors.forbidden(`Origin ${origin} may not change data`, 'ORIGIN_NOT_ALLOWED');
  }
  if (permission !== undefined && !hasPermission(agent, permission)) throw errors.insufficientClearance();
  const rank = request.routeOptions.config.rank;
  if (rank !== undefined && !hasRank(agent.agent_rank, rank)) throw errors.forbidden(`${rank} rank required`, 'RANK_REQUIRED');
  if (request.routeOptions.config.trainer && !isTrainer(agent)) throw errors.trainerRequired();
  if (admin !== undefined) {
    const refusal = adminRefusal(agent, allowlisted, admin);
    if (refusal) throw refusal;
  }
  request.principal = { kind: 'session', agent, allowlisted, token };
}

export const requestContextPlugin = fp(
  async (app: FastifyInstance, { environments, allowedOrigins, replicated, log }: RequestContextOptions) => {
    app.decorateRequest('environment', null as unknown as Environment);
    app.decorateRequest('principal', null);

    // Fail closed at startup rather than open at runtime: a route must say what it accepts.
    app.addHook('onRoute', (route) => {
      const config = route.config as { auth?: AuthMode; admin?: AdminCapability } | undefined;
      if (config?.auth === undefined && !route.url.startsWith('/docs')) {
        throw new Error(`Route ${String(route.method)} ${route.url} does not declare config.auth`);
      }
      // On a route that also takes the key (PATCH /agents/<id>/update), the capability is the sessions' gate.
      if (config?.admin !== undefined && config.auth !== 'session' && config.auth !== 'either') {
        throw new Error(`Admin route ${String(route.method)} ${route.url} must take a session`);
      }
    });

    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      reply.header('x-request-id', request.id);
      if (announcesOversizedBody(request)) throw errors.payloadTooLarge();
      const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
      if (type === FORM && !request.routeOptions.config.acceptsForm) throw errors.unsupportedMediaType(FORM);
      await resolveEnvironment(environments, request);
      await authenticate(request, reply, allowedOrigins);
    });

    // The report gate of a route that declares one, before the body is validated.
    app.addHook('preValidation', async (request: FastifyRequest) => {
      const declared = request.routeOptions.config.report;
      if (declared === undefined || request.principal?.kind !== 'session') return;
      const reportId = (request.params as Record<string, unknown> | undefined)?.report_id;
      if (typeof reportId !== 'string') return;
      const report = await findReportAccessFacts(request.environment.db, reportId);
      // An unknown report is the handler's 404, after validation like any other.
      if (report === undefined) return;
      const body = request.body !== null && typeof request.body === 'object' && !Array.isArray(request.body) ? (request.body as Record<string, unknown>) : {};
      const work = typeof declared === 'function' ? declared(body) : declared;
      if (work === 'update') assertMayUpdateReport(request, report, Object.keys(body));
      else assertMayWorkOnReport(request, report, work);
    });

    // Read-your-writes with replicas: a request that may have changed something records its
    // caller's position before its answer leaves, so the caller's next request (on any instance)
    // cannot overtake it, whatever the answer's status (a change committed and then answered 500
    // is made), but 503: the database could not be reached (recording would wait for a connection
    // again), or a commit's outcome is not known, and the client's retry (a replay, or a refusal
    // of the duplicate) records it. Not installed at all without replicas (a hook per request costs).
    if (replicated) app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply) => {
      const environment = request.environment as Environment | null;
      if (!environment?.replicas || reply.statusCode === 503) return;
      if (!changesState(request.method, request.routeOptions.config.changes)) return;
      const caller = callerOf(request);
      if (caller === undefined) return;
      try {
        await recordPosition(environment.db, caller);
      } catch (err) {
        // The change is made; without its position the caller's next reads may come from a replica
        // that has not replayed it yet, for as long as that replica lags. A primary that cannot be
        // reached is logged once as an outage (error-handler.ts), not here for every request.
        log[err instanceof DbError && cannotReachServer(err) ? 'debug' : 'error']({ request_id: request.id, err, caller: caller.split(':')[0] }, 'read position not recorded');
      }
    });
  },
  { name: 'request-context', dependencies: ['@fastify/cookie'] },
);
