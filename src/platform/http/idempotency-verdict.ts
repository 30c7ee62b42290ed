// What an Idempotency-Key's lookup decides (idempotency.ts): the request runs, or its key answers
// instead: the answer kept for it (a replay), or a refusal (409 in use, 422 reused, 403 when a
// report the answer names was flagged since). Asked inside the request's transaction when the
// handler sends its first statement, or on its own when the handler answered without one (an idle
// queue's poll): then the advisory lock is held for that statement only, which is enough to tell
// a request still running from one that is not.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/types.js';
import { assertMaySeeReport, reportFlaggedSql } from '../auth/report-access.js';
import { AppError } from '../errors.js';

export const REPLAYED_HEADER = 'idempotent-replayed';
/** How long a client waits before asking again while the first request with its key runs. */
const IN_USE_RETRY_AFTER_S = 1;

/** The key's answer instead of the request's: the one kept for it, or a refusal. */
export type Verdict = { replay: { status: number; type: string; body: string } } | { refuse: AppError };

export interface KeyOf {
  scope: string;
  key: string;
  ttlHours: number;
  fingerprint: string;
}

/** The key taken and its kept answer looked up: undefined when the request is to run. */
export async function verdictOf(db: Queryable, request: FastifyRequest, { scope, key, ttlHours, fingerprint }: KeyOf): Promise<Verdict | undefined> {
  // The key's lock and its kept answer in one round trip (migration 0035: the lookup sees an
  // answer committed while this request asked for the lock).
  const { rows } = await db.query<{ in_use: boolean; fingerprint: string | null; status: number; type: string; body: string; report_ids: string[] | null }>(
    'select in_use, fingerprint, status, content_type as type, body, report_ids from idempotency_begin($1::text, $2::text, $3::int)',
    [scope, key, ttlHours],
    { name: 'idempotency_begin' },
  );
  const kept = rows[0]!;
  if (kept.in_use) {
    return { refuse: new AppError(409, 'A request with this Idempotency-Key is still running: retry it in a moment', 'IDEMPOTENCY_KEY_IN_USE', { retryAfterSeconds: IN_USE_RETRY_AFTER_S }) };
  }
  if (kept.fingerprint === null) return undefined;
  if (kept.fingerprint !== fingerprint) return { refuse: new AppError(422, 'This Idempotency-Key was used with another request: use a new key for a new request', 'IDEMPOTENCY_KEY_REUSED') };
  // The visibility model, asked again: a report the answer names may have been flagged since.
  if ((kept.report_ids ?? []).length > 0) {
    const { rows: flagged } = await db.query<{ flagged: boolean }>(`select exists (select 1 from unnest($1::text[]) as r(id) where ${reportFlaggedSql('r.id')}) as flagged`, [kept.report_ids]);
    if (flagged[0]!.flagged) {
      try {
        assertMaySeeReport(request, { is_supervisor: true });
      } catch (err) {
        if (err instanceof AppError) return { refuse: err };
        throw err;
      }
    }
  }
  return { replay: kept };
}

/**
 * The verdict as the answer (from onSend, in place of whatever the handler answered): the kept
 * status and body marked replayed, or the refusal in the error envelope, as the error handler
 * renders it (error-handler.ts).
 */
export function renderVerdict(verdict: Verdict, request: FastifyRequest, reply: FastifyReply): string {
  if ('replay' in verdict) {
    reply.removeHeader('retry-after');
    reply.code(verdict.replay.status).header('content-type', verdict.replay.type).header(REPLAYED_HEADER, 'true');
    return verdict.replay.body;
  }
  request.log.info({ status: verdict.refuse.statusCode, code: verdict.refuse.code }, verdict.refuse.message);
  return renderError(verdict.refuse, reply);
}

/** An error as onSend's answer, in the envelope and with the headers the error handler gives it. */
export function renderError(err: AppError, reply: FastifyReply): string {
  reply.removeHeader('retry-after');
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
  reply.code(err.statusCode).header('content-type', 'application/json; charset=utf-8');
  return JSON.stringify({ success: false, error: err.message, code: err.code });
}
