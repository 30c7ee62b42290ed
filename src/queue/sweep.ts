// The stale sweep of both bot queues (spec: States and transitions, Report queue action; Limits).
// One function for every caller: each pickup runs it before claiming, and the admin sweep reuses
// it. A claimed item not completed within the stale timeout goes back to pending, or to failed once
// it has been handed out RETRY_CAP times; pending items past the cap fail too. Rows are taken with
// `for update skip locked`, so any number of instances may sweep at once and each row moves once.
// Most pickups find nothing stale, and they learn it from a probe that the planner runs as a plain
// index scan (EXISTS stops at the first row): such a scan marks the index entries of rows that have
// left `processing` as dead and skips them afterwards, where the sweep's own bitmap scan would
// visit every completed claim again until vacuum runs (measured: 2.6 ms after 15,000 completions).
import { punishmentFlaggedSql, punishmentReportIdSql } from '../platform/auth/report-access.js';
import type { Queryable } from '../platform/db/types.js';
import type { Environment } from '../platform/environments.js';
import { afterCommit } from '../platform/after-commit.js';

export const DEFAULT_STALE_TIMEOUT_MS = 10 * 60 * 1000;
/** Hand-outs before a stale item fails for good (the literal 3 is also in the partial indexes). */
export const RETRY_CAP = 3;
/** Rows moved by one sweep at most; the next pickup carries on. */
export const SWEEP_BATCH = 500;

export type SweptQueue = 'report_actions' | 'discipline_deliveries';

interface QueueShape {
  id: string;
  requeued: string;
  failed: string;
  /** report_id and is_supervisor (the report's flag now, a record only: reads ask the report) of the event written for a moved row `m`. */
  reportId: string;
  isSupervisor: string;
}

const SHAPES: Record<SweptQueue, QueueShape> = {
  report_actions: {
    id: 'action_id',
    requeued: 'queue.action_requeued',
    failed: 'queue.action_failed',
    reportId: 'm.report_id',
    isSupervisor: "coalesce((select r.is_supervisor from reports r where r.report_id = m.report_id), m.queue = 'supervisor')",
  },
  discipline_deliveries: {
    id: 'item_id',
    requeued: 'delivery.requeued',
    failed: 'delivery.failed',
    reportId: `(select ${punishmentReportIdSql('p')} from punishments p where p.punishment_id = m.punishment_id)`,
    isSupervisor: `coalesce((select ${punishmentFlaggedSql('p')} from punishments p where p.punishment_id = m.punishment_id), false)`,
  },
};

export const STALE_REQUEUED_NOTE = 'Not completed within the stale timeout: requeued by the sweep';
export const STALE_FAILED_NOTE = `Retry cap of ${RETRY_CAP} attempts reached: failed by the sweep`;

function sweepSql(table: SweptQueue): string {
  const s = SHAPES[table];
  const capped = `q.attempts >= ${RETRY_CAP}`;
  return `
    with due as (
      select ${s.id}, status as status_before from ${table}
      where (status = 'processing' and claimed_at < now() - make_interval(secs => $1::double precision))
         or (status = 'pending' and attempts >= ${RETRY_CAP})
      order by ${s.id}
      limit ${SWEEP_BATCH}
      for update skip locked
    ), moved as (
      update ${table} q set
        status = case when ${capped} then 'failed' else 'pending' end,
        last_error = case when ${capped} then $3::text else $4::text end,
        completed_at = case when ${capped} then now() end,
        claimed_at = null,
        updated_at = now()
      from due where q.${s.id} = due.${s.id}
      returning q.*, due.status_before
    ), logged as (
      insert into events (type, actor_kind, report_id, before, after, data, correlation_id, is_supervisor)
      select case when m.status = 'failed' then '${s.failed}' else '${s.requeued}' end, 'system', ${s.reportId},
             jsonb_build_object('status', m.status_before),
             jsonb_build_object('status', m.status, 'attempts', m.attempts),
             jsonb_build_object('${s.id}', m.${s.id}, 'kind', m.kind, 'swept', true, 'last_error', m.last_error),
             $2::text, ${s.isSupervisor}
      from moved m
    )
    select ${s.id} as id, status from moved order by ${s.id}`;
}

export interface SweepResult {
  requeued: number[];
  failed: number[];
}

function probeSql(table: SweptQueue): string {
  return `select exists (select 1 from ${table} where status = 'processing' and claimed_at < now() - make_interval(secs => $1::double precision))
              or exists (select 1 from ${table} where status = 'pending' and attempts >= ${RETRY_CAP}) as due`;
}

/** Moves the stale items of one queue in one statement: the rows and their events together. */
export async function sweepStale(db: Queryable, table: SweptQueue, options: { timeoutMs: number; correlationId: string }): Promise<SweepResult> {
  const probe = await db.query<{ due: boolean }>(probeSql(table), [options.timeoutMs / 1000], { name: `sweep_probe_${table}` });
  if (!probe.rows[0]?.due) return { requeued: [], failed: [] };
  const { rows } = await db.query<{ id: number; status: 'pending' | 'failed' }>(sweepSql(table), [
    options.timeoutMs / 1000,
    options.correlationId,
    STALE_FAILED_NOTE,
    STALE_REQUEUED_NOTE,
  ], { name: `sweep_${table}` });
  return {
    requeued: rows.filter((r) => r.status === 'pending').map((r) => r.id),
    failed: rows.filter((r) => r.status === 'failed').map((r) => r.id),
  };
}

/**
 * The sweep a pickup runs before it claims. It is one statement outside any transaction, so the
 * idle queues this instance keeps are cleared here when it requeued something; other instances
 * hear of it through the notifications.
 */
export async function sweepBeforePickup(env: Environment, table: SweptQueue, correlationId: string): Promise<SweepResult> {
  const swept = await sweepStale(env.db, table, { timeoutMs: env.staleTimeoutMs, correlationId });
  if (swept.requeued.length > 0) await afterCommit(env, () => env.idleQueues.clear());
  return swept;
}
