// Idempotency-Key (issue 41; DESIGN.md, draft-ietf-httpapi-idempotency-key-header): a client that
// retries a change after a 503, a timeout or a dropped connection gets the first attempt's answer
// instead of a second change. Every state-changing operation takes the header (every POST, PATCH,
// PUT and DELETE but those declared `config.changes: false`, and the claiming GETs declared
// `config.changes: true`); without it nothing here runs.
//
// With it, the request runs inside one transaction of the environment's database, in which the key
// is looked up first, and which commits only once the answer is serialised: the handler's own
// transactions run in it, and the answer's status and body are written in it (idempotency_keys,
// migration 0035). A change's transaction is opened before its handler runs; a claiming GET's by
// its handler's first statement, so that a poll answered from memory (an idle queue) has the key
// looked up on its own, without a transaction. So after a failover a retry finds the stored
// answer if the change committed, and runs afresh if it did not; a claim's retry gets the item it
// claimed. The key's scope is the environment (its database), the principal (the bot's key, or
// the signed-in agent) and the key; the request's fingerprint is its method, route, path
// parameters and body as canonical JSON (RFC 8785). A second request with the key while the first
// runs: 409 IDEMPOTENCY_KEY_IN_USE (an advisory lock on the scope and key, never waited for). Not
// stored: 5xx answers and 409 CONCURRENT_CHANGE (the retry runs again), answers that are not a
// body (streams), and those of a route that keeps none (`config.keepsAnswer`).
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import fp from 'fastify-plugin';
import { DbError, type Db, type Tx } from '../db/types.js';
import type { Environment } from '../environments.js';
import { AppError, errors, fromDbError } from '../errors.js';
import { outsideTransactionScope, runInTransactionScope, scopeOwnerOf } from '../db/transaction-guard.js';
import { afterCommitProperty, newAfterCommitQueue, runAfterCommit, type AfterCommitQueue } from '../after-commit.js';
import { keyedDb } from './idempotency-db.js';
import { keeps, reportIdsOf, storeAnswer, sweepNowAndThen } from './idempotency-store.js';
import { renderError, renderVerdict, verdictOf, type Verdict } from './idempotency-verdict.js';
import type { ErrorHandling } from './error-handler.js';
import { changesState } from './request-context.js';
import { errorResponses } from './schemas.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export { REPLAYED_HEADER } from './idempotency-verdict.js';
export { sweepExpiredAnswers } from './idempotency-store.js';
const MAX_KEY_LENGTH = 255;

const IDEMPOTENCY_HEADER_SCHEMA = {
  type: 'string',
  minLength: 1,
  // The key's 255 characters and the draft's quotes.
  maxLength: MAX_KEY_LENGTH + 2,
  description:
    'A key of the client\'s choosing (1 to 255 characters, bare or in double quotes) that makes a retry of this request return the first answer instead of changing anything again, for IDEMPOTENCY_KEY_TTL_HOURS (24). The same key with another request: 422 IDEMPOTENCY_KEY_REUSED; while the first request runs: 409 IDEMPOTENCY_KEY_IN_USE. A replayed answer carries Idempotent-Replayed: true.',
};

/** The key as sent: the draft's quoted string ("abc") or a bare token; undefined without the header. */
export function parseIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw errors.validation('Idempotency-Key must be sent once');
  const quoted = /^"(.*)"$/s.exec(raw);
  const key = quoted ? quoted[1]! : raw;
  if (key.length < 1 || key.length > MAX_KEY_LENGTH || /[\x00-\x1f\x7f"]/.test(key)) {
    throw errors.validation(`Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible characters, bare or in double quotes`);
  }
  return key;
}


/** The principal's part of the scope: the bot's key (either key during a rotation), or the agent. */
function scopeOf(request: FastifyRequest): string | undefined {
  const principal = request.principal;
  if (principal?.kind === 'key') return 'key';
  if (principal?.kind === 'session') return `agent:${principal.agent.chat_id}`;
  return undefined;
}

function fingerprintOf(request: FastifyRequest): string {
  const request_ = { method: request.method, route: request.routeOptions.url, params: request.params ?? {}, body: request.body ?? null };
  return createHash('sha256').update(canonicalize(request_) ?? '').digest('hex');
}

interface Pending {
  /** The environment itself, given back to the request once its answer is settled. */
  environment: Environment;
  /** Settled by onSend: store the answer and commit, or roll back. */
  settle(outcome: Outcome): void;
  /** The transaction's end: committed, or why not (at once when none was opened). */
  ended(): Promise<void>;
  /** Work the handler left for after the commit (after-commit.ts), run once it is made. */
  afterCommit: AfterCommitQueue;
  /** The request changed something, and its transaction was to commit. */
  wrote(): boolean;
  /**
   * What the key decided, once looked up: undefined while the request runs (or when it has not
   * been looked up: the handler sent no statement). Waits for a lookup under way.
   */
  verdict(): Promise<Verdict | undefined>;
  /** Whether the handler's first statement opened the transaction (and looked the key up in it). */
  opened(): boolean;
  /** The key looked up on its own: the handler answered without a statement. */
  lookUpAlone(): Promise<Verdict | undefined>;
  ttlHours: number;
  /** The answer is settled: a statement the handler sends now is refused. */
  seal(): void;
}

type Outcome = { store: { status: number; type: string; body: string } | null } | { rollback: true };

const pendings = new WeakMap<FastifyRequest, Pending>();
const ROLLBACK = Symbol('idempotency rollback');
const NOTHING_WRITTEN = Symbol('idempotency: nothing written');
const DECIDED = Symbol('idempotency: the key decided');

export const idempotencyPlugin = fp(
  // `log`, the root logger: request.log logs nothing when request logging is off (above info).
  async (app: FastifyInstance, { ttlHours, logError, log }: { ttlHours: number; logError: ErrorHandling['log']; log: FastifyBaseLogger }) => {
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      // Fastify answers HEAD on every GET route with the GET's handler, the body dropped: on a
      // claiming GET that would claim an item and hand it to nobody.
      if (methods.includes('HEAD') && route.config?.changes === true) {
        route.handler = async (_request, reply) => {
          reply.header('allow', 'GET');
          throw errors.methodNotAllowed('HEAD', 'GET: it claims an item');
        };
        return;
      }
      if (!methods.some((method) => changesState(method, route.config?.changes))) return;
      // Declared on the operation, for the OpenAPI document and its clients.
      const schema = route.schema as { hide?: boolean; headers?: { type?: string; properties?: Record<string, unknown> }; response?: Record<string, unknown> } | undefined;
      if (schema && !schema.hide) {
        schema.headers = { type: 'object', ...schema.headers, properties: { ...schema.headers?.properties, [IDEMPOTENCY_HEADER]: IDEMPOTENCY_HEADER_SCHEMA } };
        // The key's own refusals: another request with it (422), the first still running (409).
        if (schema.response) schema.response = { ...errorResponses(409, 422), ...schema.response };
      }
      const handler = route.handler as RouteHandlerMethod;
      route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        // Node joins two such headers into one ("a, b"): counted on the raw ones.
        if (request.raw.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === IDEMPOTENCY_HEADER).length > 1) throw errors.validation('Idempotency-Key must be sent once');
        const key = parseIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]);
        const scope = scopeOf(request);
        if (key === undefined || scope === undefined || !changesState(request.method, request.routeOptions.config.changes)) return handler.call(this, request, reply);
        return runOnce(this, handler, request, reply, { key, scope, ttlHours, log });
      };
    });

    // First of the onSend hooks (registered before the request context's): the answer is stored
    // and committed before anything after it (the caller's read position) runs.
    app.addHook('onSend', async (request, reply, payload) => {
      const pending = pendings.get(request);
      if (pending === undefined) return payload;
      pendings.delete(request);
      pending.seal();
      (request as { environment: Environment }).environment = pending.environment;
      // Out of the handler's transaction scope (runOnce): on PGlite the guard would take these
      // statements for ones sent to the outer handle inside the transaction.
      return outsideTransactionScope(async () => {
        let verdict: Verdict | undefined;
        if (pending.opened()) verdict = await pending.verdict();
        else {
          // The handler answered without a statement (an idle queue's poll): the key is looked up
          // now, on its own, and answers instead when it has an answer kept or is in use.
          try {
            verdict = await pending.lookUpAlone();
          } catch (err) {
            return failed(err, request, reply, logError);
          }
          sweepNowAndThen(pending.environment, pending.ttlHours, log);
          // Nothing ran in the database: nothing to keep.
          if (verdict === undefined) return payload;
        }
        if (verdict !== undefined) {
          await pending.ended().catch(() => undefined);
          return renderVerdict(verdict, request, reply);
        }
        return settled(pending, request, reply, payload, logError, log);
      });
    });
  },
  { name: 'idempotency' },
);

/** A failure to commit, or to look the key up, as the answer, logged as the error handler logs it. */
function failed(err: unknown, request: FastifyRequest, reply: FastifyReply, logError: ErrorHandling['log']): string {
  // Not committed, or not known to be: the client's retry finds out (stored, or runs afresh).
  // A refusal at COMMIT (a deferred constraint) is the refusal it maps to; an unknown outcome (the
  // connection lost: the adapters raise it as a DbError of class 08) is 503, and the retry finds
  // out. Anything else is this service's fault, a 500 as the error handler answers it.
  const failure =
    err instanceof AppError
      ? err
      : err instanceof DbError || typeof (err as { code?: unknown })?.code === 'string'
        ? fromDbError(DbError.from(err))
        : errors.internal(err instanceof Error && err.message ? err.message : 'Internal error');
  logError(failure, request, err);
  return renderError(failure, reply);
}

/** The request ran in its transaction: its answer kept and committed, or rolled back. */
async function settled(
  pending: Pending,
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  logError: ErrorHandling['log'],
  log: FastifyBaseLogger,
): Promise<unknown> {
  const ttlHours = pending.ttlHours;
  if (!keeps(reply.statusCode, payload)) {
    pending.settle({ rollback: true });
    await pending.ended().catch(() => undefined);
    return payload;
  }
  const type = String(reply.getHeader('content-type') ?? 'application/json; charset=utf-8');
  // An empty answer (204) is kept as one; a stream or a buffer is not kept (its retry asks again),
  // nor the answer of a route that keeps none (its retry runs again).
  const body = typeof payload === 'string' ? payload : payload === undefined || payload === null ? '' : undefined;
  const kept = body !== undefined && request.routeOptions.config.keepsAnswer !== false;
  pending.settle({ store: kept ? { status: reply.statusCode, type, body } : null });
  try {
    await pending.ended();
    if (pending.wrote()) await runAfterCommit(pending.afterCommit, (err) => log.error({ request_id: request.id, err }, 'work after the commit failed'));
    sweepNowAndThen(pending.environment, ttlHours, log);
    return payload;
  } catch (err) {
    return failed(err, request, reply, logError);
  }
}

async function runOnce(
  app: FastifyInstance,
  handler: RouteHandlerMethod,
  request: FastifyRequest,
  reply: FastifyReply,
  { key, scope, ttlHours, log }: { key: string; scope: string; ttlHours: number; log: FastifyBaseLogger },
): Promise<FastifyReply> {
  const environment = request.environment;
  const keyOf = { scope, key, ttlHours, fingerprint: fingerprintOf(request) };
  let settle!: Pending['settle'];
  const settled = new Promise<Outcome>((resolve) => (settle = resolve));
  let wrote = false;
  let verdict: Promise<Verdict | undefined> | undefined;
  let ended: Promise<void> = Promise.resolve();
  let opening: Promise<Tx> | undefined;
  let sealed = false;
  // The request's transaction, opened before a change's handler runs, or by a claiming GET's
  // first statement, which waits for it: the key is taken and looked up first, in it. When the key
  // answers instead (a kept answer, a refusal), the transaction is rolled back (and a claiming
  // GET's statement fails); onSend answers with the key's answer whatever the handler made of
  // that. A claiming GET that sends no statement (an idle queue's poll) costs the lookup alone, in
  // onSend.
  const open = (): Promise<Tx> => {
    if (opening !== undefined) return opening;
    if (sealed) return Promise.reject(new DbError('a statement after the request was answered: it belongs before the answer', undefined, undefined, undefined));
    opening = new Promise<Tx>((resolveTx, rejectTx) => {
      let decide!: (v: Verdict | undefined) => void;
      verdict = new Promise((resolve) => (decide = resolve));
      const transaction = outsideTransactionScope(() =>
        environment.db.transaction(async (tx) => {
          const found = await verdictOf(tx, request, keyOf);
          decide(found);
          if (found !== undefined) throw DECIDED;
          resolveTx(tx);
          const outcome = await settled;
          if ('rollback' in outcome) throw ROLLBACK;
          // A statement or transaction of the handler failed: whatever the request changed is
          // undone (the transaction may be aborted), and its answer, a refusal, is not kept.
          if (keyed.failed()) throw NOTHING_WRITTEN;
          // Kept only when the request changed something: an answer that changed nothing (a
          // refusal, an empty queue) is asked again by a retry, which then sees the state as it
          // is. Nothing written: rolled back, so that no commit clears this instance's caches
          // (environment-db.ts). An answer that cannot be kept (a stream): committed when the
          // request wrote something.
          const stored =
            outcome.store === null
              ? (await tx.query<{ wrote: boolean }>('select txid_current_if_assigned() is not null as wrote')).rows[0]!.wrote ? 1 : 0
              : await storeAnswer(tx, scope, key, keyOf.fingerprint, { ...outcome.store, reportIds: reportIdsOf(request, outcome.store.body) }, { ifWritten: true });
          if (stored === 0) throw NOTHING_WRITTEN;
          wrote = true;
        }),
      );
      ended = transaction.catch((err: unknown) => {
        if (err !== NOTHING_WRITTEN && err !== ROLLBACK && err !== DECIDED) throw err;
      });
      transaction.catch((err: unknown) => {
        // The lookup failed (the database): no verdict, and the handler's statement fails with it.
        decide(undefined);
        // Never the answer (onSend renders the verdict): not logged as one.
        rejectTx(err === DECIDED ? new AppError(409, 'The Idempotency-Key answers this request', 'IDEMPOTENCY_KEY_DECIDED', { silent: true }) : err);
      });
    });
    return opening;
  };
  const keyed = keyedDb(environment.db as Db, open);
  const queue = newAfterCommitQueue();
  pendings.set(request, {
    environment,
    settle,
    ended: () => ended,
    afterCommit: queue,
    wrote: () => wrote,
    verdict: () => verdict ?? Promise.resolve(undefined),
    opened: () => opening !== undefined,
    lookUpAlone: () => verdictOf(environment.db, request, keyOf),
    ttlHours,
    seal: () => (sealed = true),
  });
  (request as { environment: Environment }).environment = Object.create(environment, {
    ...afterCommitProperty(queue),
    db: { value: keyed.db, enumerable: true },
    // Reads see this transaction's changes: none goes to a replica.
    replicas: { value: undefined, enumerable: true },
  }) as Environment;
  // A change's handler runs once its key is looked up: whatever it does before its first statement
  // must not run for a replay or a refusal. A claiming GET's runs at once, so that a poll answered
  // from memory (an idle queue) needs no transaction: what such a handler does before its first
  // statement is read memory, nothing else; and so does a route that declares `keyLookedUpLate`.
  if (request.method !== 'GET' && request.routeOptions.config.keyLookedUpLate !== true) {
    try {
      await open();
    } catch (err) {
      // The key answers (onSend renders its verdict), or the lookup failed (the error handler's 503).
      if ((await verdict) !== undefined) return reply.send();
      throw err;
    }
  }
  // The handler runs as inside the transaction's scope: on PGlite a statement sent to the
  // environment's own Db instead of the request's fails at once rather than waiting for the
  // connection this request holds. Its answer reaches onSend, which settles the transaction.
  await runInTransactionScope(scopeOwnerOf(environment.db), async () => {
    try {
      const result: unknown = await handler.call(app, request, reply);
      if (!reply.sent) reply.send(result !== undefined && result !== reply ? result : errors.internal('The handler sent no answer'));
    } catch (err) {
      if (!reply.sent) reply.send(err as Error);
      // As Fastify logs a handler that failed after its answer went out.
      else log.error({ request_id: request.id, err }, 'the handler failed after its answer was sent');
    }
  });
  return reply;
}
