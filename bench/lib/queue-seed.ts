// Filling the two bot queues in bulk, straight through the driver (set-based, one statement per
// table), for the exactly-once test and the queue benchmarks.
import type { Queryable } from '../../src/platform/db/types.js';

/** `count` pending report actions over count/10 reports (every third report supervisor-flagged); returns their ids. */
export async function seedActions(db: Queryable, count: number, prefix = 'FLEET'): Promise<number[]> {
  const reports = Math.max(1, Math.ceil(count / 10));
  await db.query(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence, is_supervisor)
     select $1::text || '-' || i, '421337905512268801', '508812330461199872', 'Queue drain', '', '', i % 3 = 0
     from generate_series(1, $2::int) i`,
    [prefix, reports],
  );
  const { rows } = await db.query<{ action_id: number }>(
    `insert into report_actions (report_id, kind, queue, payload, created_at)
     select $1::text || '-' || (1 + i % $3::int), 'investigate', case when (1 + i % $3::int) % 3 = 0 then 'supervisor' else 'operator' end,
            jsonb_build_object('reason', 'drain ' || i), now() - make_interval(secs => ($2::int - i) / 1000.0)
     from generate_series(0, $2::int - 1) i
     returning action_id`,
    [prefix, count, reports],
  );
  return rows.map((r) => r.action_id);
}

/** `count` punishments, each with a pending issue delivery; returns the delivery item ids. */
export async function seedDeliveries(db: Queryable, count: number): Promise<number[]> {
  // Mixed radix over the AA0AA0 pattern, so every i gets its own punishment id.
  const { rows } = await db.query<{ item_id: number }>(
    `with issued as (
       insert into punishments (punishment_id, user_id, reason, duration)
       select chr(65 + (i / 1757600) % 26) || chr(65 + (i / 67600) % 26) || ((i / 6760) % 10)::text
              || chr(65 + (i / 260) % 26) || chr(65 + (i / 10) % 26) || (i % 10)::text,
              (600000000000000000 + i)::text, 'Queue drain', '1d'
       from generate_series(0, $1::int - 1) i
       returning punishment_id, user_id)
     insert into discipline_deliveries (kind, punishment_id, user_id)
     select 'issue', punishment_id, user_id from issued order by punishment_id
     returning item_id`,
    [count],
  );
  return rows.map((r) => r.item_id);
}
