// The answers kept for Idempotency-Key (idempotency.ts, migration 0035): written with the request's
// change, and swept once past IDEMPOTENCY_KEY_TTL_HOURS.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Db, Queryable } from '../db/types.js';
import type { Environment } from '../environments.js';

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
/** The environment's expired answers swept, at most once a minute per instance, never waited for. */
export function sweepNowAndThen(environment: Environment, ttlHours: number, log: FastifyBaseLogger): void {
  const now = Date.now();
  if (now - (lastSweep.get(environment.db) ?? 0) < SWEEP_EVERY_MS) return;
  lastSweep.set(environment.db, now);
  const sweep = async (): Promise<void> => {
    // Batch after batch until none is left: the answers hold personal data.
    while ((await sweepExpiredAnswers(environment.db, ttlHours)) === SWEEP_BATCH);
  };
  sweep().catch((err: unknown) => log.warn({ err, environment: environment.name }, 'expired idempotency keys not swept'));
}

/**
 * The answer, kept; with `ifWritten` only where the transaction has written something (it has a
 * transaction id: txid_current_if_assigned(), asked before this insert assigns one). Returns the
 * rows written (0 or 1).
 */
export async function storeAnswer(
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
export function reportIdsOf(request: FastifyRequest, body: string): string[] {
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
export function keeps(status: number, payload: unknown): boolean {
  if (status >= 500) return false;
  if (status === 409 && typeof payload === 'string' && payload.includes('"CONCURRENT_CHANGE"')) return false;
  return true;
}
