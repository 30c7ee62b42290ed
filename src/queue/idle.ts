// The bot polls its queues without pause, and most polls find nothing. After a pickup that found
// nothing, this instance remembers the queue as idle, and answers the next polls 204 without a
// round trip, until one of these:
// - a notification on cms_queue_changed (migration 0010: an item became pending, or a
//   punishment's expiry moved), from any instance or any other writer;
// - any transaction this instance commits (Environments clears at once);
// - the earliest moment something becomes claimable by the clock alone: a claimed item going
//   stale, a paced retry falling due, a punishment expiring (computed by the database, on its
//   clock), and never later than 10 s;
// - the listening connection dropping (nothing is remembered while notifications may be missed).
// Only 204s come from here: an item is always handed out by the claim itself.
import type { Queryable } from '../platform/db/types.js';
import type { Environment } from '../platform/environments.js';

export type IdleKey = 'actions' | 'actions:operator' | 'actions:supervisor' | 'discipline';

/** Milliseconds until an action may go stale, or null when none is claimed. */
async function actionsDueIn(db: Queryable, staleTimeoutMs: number): Promise<number | null> {
  const { rows } = await db.query<{ due_in: number | null }>(
    `select (extract(epoch from min(claimed_at) - now()) * 1000)::float8 + $1::float8 as due_in
     from report_actions where status = 'processing'`,
    [staleTimeoutMs],
    { name: 'actions_due_in' },
  );
  return rows[0]?.due_in ?? null;
}

/** Milliseconds until a delivery may go stale or fall due, or a punishment expire; null for never. */
async function disciplineDueIn(db: Queryable, staleTimeoutMs: number): Promise<number | null> {
  const { rows } = await db.query<{ due_in: number | null }>(
    `select (extract(epoch from least(
        (select min(claimed_at) from discipline_deliveries where status = 'processing') + make_interval(secs => $1::float8 / 1000),
        (select min(available_at) from discipline_deliveries where status = 'pending'),
        (select min(expires_at) from punishments where status in ('Active', 'Appealed') and expires_at is not null)
      ) - now()) * 1000)::float8 as due_in`,
    [staleTimeoutMs],
    { name: 'discipline_due_in' },
  );
  return rows[0]?.due_in ?? null;
}

/**
 * Runs `pickup` (sweeps and a claim) unless the queue is known to be idle. When it hands out
 * nothing, the queue is remembered as idle until the earliest clock-driven change; the mark taken
 * before the pickup makes a notification that arrived meanwhile win.
 */
export async function unlessIdle<T>(env: Environment, key: IdleKey, pickup: () => Promise<T | undefined>): Promise<T | undefined> {
  const idle = env.idleQueues;
  if (idle.get(key)) return undefined;
  const mark = idle.mark();
  const item = await pickup();
  if (item !== undefined) return item;
  const dueIn = key === 'discipline' ? await disciplineDueIn(env.db, env.staleTimeoutMs) : await actionsDueIn(env.db, env.staleTimeoutMs);
  const ttl = dueIn === null ? Number.POSITIVE_INFINITY : Math.floor(dueIn);
  if (ttl > 0) idle.store(key, true, mark, Date.now(), ttl);
  return undefined;
}
