// Idempotency-Key (issue 41; DESIGN.md, draft-ietf-httpapi-idempotency-key-header): a client that
// retries a change after a 503, a timeout or a dropped connection gets the first attempt's answer
// instead of a second change. Every state-changing operation takes the header (every POST, PATCH,
// PUT and DELETE, and the claiming GETs declared `config.changes`); without it nothing here runs.
//
// With it, the request runs inside one transaction of the environment's database, opened before
// its handler and committed only once its answer is serialised: the handler's own transactions
// are savepoints in it, and the answer's status and body are written in it (idempotency_keys,
// migration 0035). So after a failover a retry finds the stored answer if the change committed,
// and runs afresh if it did not; a claim's retry gets the item it claimed. The key's scope is the
// environment (its database), the principal (the bot's key, or the signed-in agent) and the key;
// the request's fingerprint is its method, route, path parameters and body as canonical JSON
// (RFC 8785). A second request with the key while the first runs: 409 IDEMPOTENCY_KEY_IN_USE
// (an advisory lock on the scope and key, never waited for). Not stored: 5xx answers and 409
// CONCURRENT_CHANGE (the retry runs again), and answers that are not a body (streams).
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import fp from 'fastify-plugin';
import { DbError, type Db, type Queryable } from '../db/types.js';
import type { Environment } from '../environments.js';
import { assertMaySeeReport, reportFlaggedSql } from '../auth/report-access.js';
import { AppError, errors, fromDbError } from '../errors.js';
import { outsideTransactionScope } from '../db/transaction-guard.js';
import { afterCommitProperty, newAfterCommitQueue, runAfterCommit, type AfterCommitQueue } from '../after-commit.js';
import { keyedDb } from './idempotency-db.js';
import { errorResponses } from './schemas.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
const MAX_KEY_LENGTH = 255;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** How long a client waits before asking again while the first request with its key runs. */
const IN_USE_RETRY_AFTER_S = 1;

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

/** Whether a route changes state, and so takes the header. */
export const changesState = (method: string, changes: boolean | undefined): boolean => !SAFE_METHODS.has(method) || changes === true;

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
  /** The transaction's end: committed, or why not. */
  ended(): Promise<void>;
  /** Work the handler left for after the commit (after-commit.ts), run once it is made. */
  afterCommit: AfterCommitQueue;
  /** The request changed something, and its transaction was to commit. */
  wrote(): boolean;
}

type Outcome = { store: { status: number; type: string; body: string } | null } | { rollback: true };

const pendings = new WeakMap<FastifyRequest, Pending>();
/** How often each instance sweeps an environment's expired answers (after a request with a key). */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_BATCH = 1_000;
const lastSweep = new WeakMap<Db, number>();

/** Deletes up to SWEEP_BATCH answers kept past the TTL; returns how many. */
export async function sweepExpiredAnswers(db: Queryable, ttlHours: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from idempotency_keys where ctid in (
       select ctid from idempotency_keys where created_at < now() - make_interval(hours => $1::int) limit $2::int)`,
    [ttlHours, SWEEP_BATCH],
  );
  return rowCount;
}
const ROLLBACK = Symbol('idempotency rollback');
const NOTHING_WRITTEN = Symbol('idempotency: nothing written');

export const idempotencyPlugin = fp(
  async (app: FastifyInstance, { ttlHours }: { ttlHours: number }) => {
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
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
        return runOnce(this, handler, request, reply, { key, scope, ttlHours });
      };
    });

    // First of the onSend hooks (registered before the request context's): the answer is stored
    // and committed before anything after it (the caller's read position) runs.
    app.addHook('onSend', async (request, reply, payload) => {
      const pending = pendings.get(request);
      if (pending === undefined) return payload;
      pendings.delete(request);
      (request as { environment: Environment }).environment = pending.environment;
      if (!keeps(reply.statusCode, payload)) {
        pending.settle({ rollback: true });
        await pending.ended().catch(() => undefined);
        return payload;
      }
      const type = String(reply.getHeader('content-type') ?? 'application/json; charset=utf-8');
      // An empty answer (204) is kept as one; a stream or a buffer is not kept (its retry asks again).
      const body = typeof payload === 'string' ? payload : payload === undefined || payload === null ? '' : undefined;
      pending.settle({ store: body === undefined ? null : { status: reply.statusCode, type, body } });
      try {
        await pending.ended();
        // Reached from inside the transaction's callback: out of its scope (on PGlite the guard
        // would take the work's statements for ones sent to the outer handle inside it).
        await outsideTransactionScope(async () => {
          if (pending.wrote()) await runAfterCommit(pending.afterCommit, (err) => request.log.error({ err }, 'work after the commit failed'));
          sweepNowAndThen(pending.environment, ttlHours, request);
        });
        return payload;
      } catch (err) {
        // Not committed, or not known to be: the client's retry finds out (stored, or runs afresh).
        // A refusal at COMMIT (a deferred constraint) is the refusal it maps to; an unknown
        // outcome (the connection lost) is 503, and the retry finds out.
        const failure =
          err instanceof AppError ? err : err instanceof DbError || (err as { code?: unknown })?.code !== undefined ? fromDbError(DbError.from(err)) : new AppError(503, `Database unavailable: ${String((err as Error)?.message ?? err)}`, 'DATABASE_UNAVAILABLE');
        reply.code(failure.statusCode);
        return JSON.stringify({ success: false, error: failure.message, code: failure.code });
      }
    });
  },
  { name: 'idempotency' },
);

/** The environment's expired answers swept, at most once a minute per instance, never waited for. */
function sweepNowAndThen(environment: Environment, ttlHours: number, request: FastifyRequest): void {
  const now = Date.now();
  if (now - (lastSweep.get(environment.db) ?? 0) < SWEEP_EVERY_MS) return;
  lastSweep.set(environment.db, now);
  const sweep = async (): Promise<void> => {
    // Batch after batch until none is left: the answers hold personal data.
    while ((await sweepExpiredAnswers(environment.db, ttlHours)) === SWEEP_BATCH);
  };
  sweep().catch((err: unknown) => request.log.warn({ err }, 'expired idempotency keys not swept'));
}

/**
 * The answer, kept; with `ifWritten` only where the transaction has written something (it has a
 * transaction id: txid_current_if_assigned(), asked before this insert assigns one). Returns the
 * rows written (0 or 1).
 */
async function storeAnswer(
  db: Queryable,
  scope: string,
  key: string,
  fingerprint: string,
  answer: { status: number; type: string; body: string; reportIds: string[] },
  options: { ifWritten: boolean },
): Promise<number> {
  const { rowCount } = await db.query(
    `insert into idempotency_keys (scope, key, fingerprint, status, content_type, body, report_ids)
     select $1::text, $2::text, $3::text, $4::int, $5::text, $6::text, $8::text[] where not $7::boolean or txid_current_if_assigned() is not null
     on conflict (scope, key) do update
       set fingerprint = excluded.fingerprint, status = excluded.status, content_type = excluded.content_type, body = excluded.body,
           report_ids = excluded.report_ids, created_at = now()`,
    [scope, key, fingerprint, answer.status, answer.type, answer.body, options.ifWritten, answer.reportIds],
    { name: 'idempotency_store' },
  );
  return rowCount;
}

const MAX_REPORT_IDS = 100;

/** The reports a request and its answer name (every `report_id` in them), for the replay's visibility check. */
function reportIdsOf(request: FastifyRequest, body: string): string[] {
  const found = new Set<string>();
  const walk = (value: unknown, depth: number): void => {
    if (found.size >= MAX_REPORT_IDS || depth > 8 || value === null || typeof value !== 'object') return;
    for (const [name, inner] of Object.entries(value)) {
      if (name === 'report_id' && typeof inner === 'string') found.add(inner);
      else walk(inner, depth + 1);
    }
  };
  walk(request.params, 0);
  walk(request.body, 0);
  try {
    walk(JSON.parse(body), 0);
  } catch {
    // Not JSON: it names nothing.
  }
  return [...found];
}

/** What is committed and kept: not a 5xx, not a concurrent change (the retry runs again). */
function keeps(status: number, payload: unknown): boolean {
  if (status >= 500) return false;
  if (status === 409 && typeof payload === 'string' && payload.includes('"CONCURRENT_CHANGE"')) return false;
  return true;
}

async function runOnce(
  app: FastifyInstance,
  handler: RouteHandlerMethod,
  request: FastifyRequest,
  reply: FastifyReply,
  { key, scope, ttlHours }: { key: string; scope: string; ttlHours: number },
): Promise<FastifyReply> {
  const environment = request.environment;
  const fingerprint = fingerprintOf(request);
  let settle!: Pending['settle'];
  const settled = new Promise<Outcome>((resolve) => (settle = resolve));
  let replay: { status: number; type: string; body: string } | undefined;
  let begun!: () => void;
  const started = new Promise<void>((resolve) => (begun = resolve));
  let wrote = false;
  const transaction = environment.db.transaction(async (tx) => {
    // The key's lock and its kept answer in one round trip (migration 0035: the lookup sees an
    // answer committed while this request asked for the lock).
    const { rows } = await tx.query<{ in_use: boolean; fingerprint: string | null; status: number; type: string; body: string; report_ids: string[] | null }>(
      'select in_use, fingerprint, status, content_type as type, body, report_ids from idempotency_begin($1::text, $2::text, $3::int)',
      [scope, key, ttlHours],
      { name: 'idempotency_begin' },
    );
    const kept = rows[0]!;
    if (kept.in_use) throw new AppError(409, 'A request with this Idempotency-Key is still running: retry it in a moment', 'IDEMPOTENCY_KEY_IN_USE', { retryAfterSeconds: IN_USE_RETRY_AFTER_S });
    if (kept.fingerprint !== null) {
      if (kept.fingerprint !== fingerprint) throw new AppError(422, 'This Idempotency-Key was used with another request: use a new key for a new request', 'IDEMPOTENCY_KEY_REUSED');
      // The visibility model, asked again: a report the answer names may have been flagged since.
      if ((kept.report_ids ?? []).length > 0) {
        const { rows: flagged } = await tx.query<{ flagged: boolean }>(`select exists (select 1 from unnest($1::text[]) as r(id) where ${reportFlaggedSql('r.id')}) as flagged`, [kept.report_ids]);
        if (flagged[0]!.flagged) assertMaySeeReport(request, { is_supervisor: true });
      }
      replay = kept;
      return;
    }
    const queue = newAfterCommitQueue();
    pendings.set(request, { environment, settle, ended: () => ended, afterCommit: queue, wrote: () => wrote });
    const keyed = keyedDb(environment.db as Db, tx);
    (request as { environment: Environment }).environment = Object.create(environment, {
      ...afterCommitProperty(queue),
      db: { value: keyed.db, enumerable: true },
      // Reads see this transaction's changes: none goes to a replica.
      replicas: { value: undefined, enumerable: true },
    }) as Environment;
    begun();
    // The handler runs inside the transaction's scope: on PGlite a statement sent to the
    // environment's own Db instead of the request's fails at once rather than hanging. Its promise
    // is not awaited: a handler that returns the reply (a thenable) settles only once the answer
    // is written, after the commit below; its answer reaches onSend, which settles `settled`.
    Promise.resolve()
      .then(() => handler.call(app, request, reply))
      .then(
        (result: unknown) => {
          if (!reply.sent) reply.send(result !== undefined && result !== reply ? result : errors.internal('The handler sent no answer'));
        },
        (err: unknown) => {
          if (!reply.sent) reply.send(err as Error);
        },
      );
    const outcome = await settled;
    if ('rollback' in outcome) throw ROLLBACK;
    // A statement or transaction of the handler failed: whatever the request changed is undone
    // (the transaction may be aborted), and its answer, a refusal, is not kept.
    if (keyed.failed()) throw NOTHING_WRITTEN;
    // Kept only when the request changed something: an answer that changed nothing (a refusal,
    // an empty queue) is asked again by a retry, which then sees the state as it is. Nothing
    // written: rolled back, so that no commit clears this instance's caches (environment-db.ts).
    // An answer that cannot be kept (a stream): committed when the request wrote something.
    const stored =
      outcome.store === null
        ? (await tx.query<{ wrote: boolean }>('select txid_current_if_assigned() is not null as wrote')).rows[0]!.wrote ? 1 : 0
        : await storeAnswer(tx, scope, key, fingerprint, { ...outcome.store, reportIds: reportIdsOf(request, outcome.store.body) }, { ifWritten: true });
    if (stored === 0) throw NOTHING_WRITTEN;
    wrote = true;
  });
  const ended = transaction.catch(async (err: unknown) => {
    if (err !== NOTHING_WRITTEN) throw err;
  });
  // The lookup's refusal (409 in use, 422 reused) or a database failure before the handler ran.
  await Promise.race([started, ended.then(() => undefined)]).catch((err) => {
    if (err !== ROLLBACK) throw err;
  });
  if (replay !== undefined) {
    return reply.code(replay.status).header(REPLAYED_HEADER, 'true').type(replay.type).send(replay.body);
  }
  await ended.catch((err) => {
    if (err !== ROLLBACK && !reply.sent) throw err;
  });
  return reply;
}
