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

/**
 * A working queue over the generated reports (`BENCH-…`, bench/lib/generate-data.ts, 1 to `reports`):
 * `open` actions waiting (a fifth of them claimed: processing) and `done` finished ones (success,
 * some failed or cancelled) as history, each on the queue its report's flag puts it on (a tenth of
 * the reports are flagged; the claimed ones all land on unflagged reports, since both choices
 * follow g modulo 5: the supervisor queue holds pending items only). The claims go stale with time, but only a pickup sweeps, and nothing
 * that reads these rows picks up.
 */
export async function seedQueueBacklog(db: Queryable, reports: number, counts: { open: number; done: number }): Promise<void> {
  await db.query(
    `insert into report_actions (report_id, kind, queue, status, payload, attempts, requested_by, claimed_at, completed_at, result_note, created_at, updated_at)
     select 'BENCH-' || lpad(a.r::text, 8, '0'),
            (array['claim', 'investigate', 'validate', 'invalidate', 'contact_reporter'])[1 + a.g % 5],
            case when a.r % 10 = 0 then 'supervisor' else 'operator' end,
            a.status,
            jsonb_build_object('reason', 'backlog ' || a.g),
            case when a.status = 'pending' then 0 else 1 end,
            (200000000000000000 + a.g % 50)::text,
            case when a.status = 'pending' then null else a.at + interval '1 minute' end,
            case when a.status in ('pending', 'processing') then null else a.at + interval '2 minutes' end,
            case when a.status in ('pending', 'processing') then null else 'done by the bench' end,
            a.at, a.at
       from (select g, 1 + (g * 7919) % $1::bigint as r,
                    case when g > $3::int then (array['success', 'success', 'success', 'success', 'success', 'success', 'success', 'failed', 'cancelled'])[1 + g % 9]
                         when g % 5 = 0 then 'processing' else 'pending' end as status,
                    -- The open ones are the newest; the claims were made a minute after their creation.
                    case when g > $3::int then now() - make_interval(secs => 3600 + (g - $3::int) * 60)
                         when g % 5 = 0 then now() - interval '2 minutes'
                         else now() - make_interval(secs => g * 30) end as at
               from generate_series(1, $2::int) g) a`,
    [reports, counts.open + counts.done, counts.open],
  );
}
