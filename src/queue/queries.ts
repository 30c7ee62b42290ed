// The report action queue (spec: Report action queues): rows are enqueued inside the transaction
// of the change that asks the bot to act, so a rolled-back change never reaches the bot.
import { maySeeReport } from '../platform/auth/report-access.js';
import type { Queryable, Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import type { Principal } from '../platform/auth/principal.js';

export const ACTION_KINDS = ['claim', 'investigate', 'validate', 'invalidate', 'contact_reporter', 'contact_message', 'contact_closed'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];
export type QueueName = 'operator' | 'supervisor';

export interface ReportActionRow {
  action_id: number;
  report_id: string;
  kind: ActionKind;
  queue: QueueName;
  status: 'pending' | 'processing' | 'success' | 'failed' | 'cancelled';
  payload: Record<string, unknown>;
  attempts: number;
  result_note: string | null;
  last_error: string | null;
  requested_by: string | null;
  claimed_at: string | null;
  completed_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface NewReportAction {
  reportId: string;
  kind: ActionKind;
  queue: QueueName;
  payload?: Record<string, unknown>;
  /** Chat id of the agent who asked, or null for the bot or the service. */
  requestedBy?: string | null;
}

export async function enqueueReportAction(tx: Tx, action: NewReportAction): Promise<ReportActionRow> {
  const { rows } = await tx.query<ReportActionRow>(
    `insert into report_actions (report_id, kind, queue, payload, requested_by)
     values ($1::text, $2::text, $3::text, $4::jsonb, $5::text) returning *`,
    [action.reportId, action.kind, action.queue, JSON.stringify(action.payload ?? {}), action.requestedBy ?? null],
  );
  return rows[0]!;
}

/** What the bot needs of the report an action is about (spec: "joined with report basics"). */
export interface ReportBasics {
  report_id: string;
  status: string;
  reporter: string;
  reported: string;
  reporter_name: string | null;
  reported_name: string | null;
  reason: string;
  assigned_agent: string | null;
  is_supervisor: boolean;
  thread_id: string | null;
}

/** What those who may not see a supervisor-flagged report learn of it (as in the report lists). */
export interface RestrictedReport {
  report_id: string;
  status: string;
  is_supervisor: true;
  restricted: true;
}

export interface QueuedAction extends ReportActionRow {
  /** Null only when the report was deleted while the action waited (its rows cascade away then). */
  report: ReportBasics | RestrictedReport | null;
  /** The report is supervisor-flagged and the caller may not see it: no payload, note or error. */
  restricted?: true;
}

/**
 * An action as this caller may see it, decided by the report's current flag (the joined row): an
 * action on a report the caller may not see keeps its queue metadata and loses every text the
 * report or the bot put in it.
 */
export function shownAction(principal: Principal | null, action: QueuedAction): QueuedAction {
  const report = action.report;
  if (report === null || maySeeReport(principal, report)) return action;
  return {
    ...action,
    payload: {},
    result_note: null,
    last_error: null,
    // Who asked for it works the case: the report placeholder does not say who that is.
    requested_by: null,
    restricted: true,
    report: { report_id: report.report_id, status: report.status, is_supervisor: true, restricted: true },
  };
}

const WITH_REPORT = `
  select a.*, case when r.report_id is null then null else jsonb_build_object(
    'report_id', r.report_id, 'status', r.status, 'reporter', r.reporter, 'reported', r.reported,
    'reporter_name', r.reporter_name, 'reported_name', r.reported_name, 'reason', r.reason,
    'assigned_agent', r.assigned_agent, 'is_supervisor', r.is_supervisor, 'thread_id', r.thread_id) end as report`;

/**
 * Claims the oldest pending action (of one queue, or of both) in one statement: rows another
 * claimer holds are skipped, so concurrent pickups never hand out the same action.
 */
export async function claimNextAction(db: Queryable, queue: QueueName | undefined): Promise<QueuedAction | undefined> {
  const { rows } = await db.query<QueuedAction>(
    `with claimed as (
       update report_actions set status = 'processing', attempts = attempts + 1, claimed_at = now(), updated_at = now()
       where action_id = (
         select action_id from report_actions
         where status = 'pending'${queue ? ' and queue = $1::text' : ''}
         order by created_at, action_id limit 1
         for update skip locked)
       returning *)
     ${WITH_REPORT} from claimed a left join reports r on r.report_id = a.report_id`,
    queue ? [queue] : [],
    { name: `claim_action_${queue ?? 'any'}` },
  );
  return rows[0];
}

export async function lockAction(tx: Tx, actionId: number): Promise<ReportActionRow | undefined> {
  const { rows } = await tx.query<ReportActionRow>('select * from report_actions where action_id = $1::bigint for update', [actionId], { name: 'lock_action' });
  return rows[0];
}

export type CompletedAction =
  | { outcome: 'not_found' }
  | { outcome: 'already_completed'; status: ReportActionRow['status'] }
  | { outcome: 'completed'; action: QueuedAction };

/**
 * The bot's completion in one statement (the hot path: one round trip, the row lock held for one
 * statement): lock the action, move it to its terminal status unless it already has one, write
 * queue.action_completed or queue.action_failed, and answer with the report basics. A pending
 * action is completed too: the sweep may have returned it while the bot was still at work, and a
 * late completion means the work is done. A concurrent completion waits for the lock and then
 * sees the terminal status.
 */
export async function completeAction(
  db: Queryable,
  input: { actionId: number; result: 'success' | 'failed'; note: string | null; correlationId: string },
): Promise<CompletedAction> {
  const { rows } = await db.query<QueuedAction & { status_before: ReportActionRow['status']; done: boolean }>(
    `with target as (
       select action_id, status from report_actions where action_id = $1::bigint for update
     ), done as (
       update report_actions a set status = $2::text, result_note = $3::text,
         last_error = case when $2::text = 'failed' then coalesce($3::text, a.last_error) else a.last_error end,
         completed_at = now(), updated_at = now()
       from target t where a.action_id = t.action_id and t.status in ('pending', 'processing')
       returning a.*
     ), logged as (
       insert into events (type, actor_kind, report_id, before, after, data, correlation_id, is_supervisor)
       select case when d.status = 'success' then 'queue.action_completed' else 'queue.action_failed' end, 'bot', d.report_id,
              jsonb_build_object('status', t.status), jsonb_build_object('status', d.status, 'result_note', d.result_note),
              jsonb_build_object('action_id', d.action_id, 'kind', d.kind, 'queue', d.queue, 'attempts', d.attempts, 'note', $3::text),
              $4::text, d.queue = 'supervisor'
       from done d, target t
     )
     ${WITH_REPORT.replace('select a.*', 'select a.*, t.status as status_before, a.action_id is not null as done')}
     from target t left join done a on true left join reports r on r.report_id = a.report_id`,
    [input.actionId, input.result, input.note, input.correlationId],
    { name: 'complete_action' },
  );
  const row = rows[0];
  if (!row) return { outcome: 'not_found' };
  if (!row.done) return { outcome: 'already_completed', status: row.status_before };
  const { status_before: _before, done: _done, ...action } = row;
  return { outcome: 'completed', action };
}

/** Failed back to pending with a fresh retry budget, on `queue` (the one its report's flag decides). */
export async function requeueAction(tx: Tx, actionId: number, queue: 'operator' | 'supervisor'): Promise<ReportActionRow> {
  const { rows } = await tx.query<ReportActionRow>(
    `update report_actions set status = 'pending', attempts = 0, claimed_at = null, completed_at = null, queue = $2::text, updated_at = now()
     where action_id = $1::bigint returning *`,
    [actionId, queue],
  );
  return rows[0]!;
}

export async function actionWithReport(db: Queryable, principal: Principal | null, actionId: number): Promise<QueuedAction | undefined> {
  const { rows } = await db.query<QueuedAction>(
    `${WITH_REPORT} from report_actions a left join reports r on r.report_id = a.report_id where a.action_id = $1::bigint`,
    [actionId],
    { name: 'action_with_report' },
  );
  return rows[0] && shownAction(principal, rows[0]);
}

/** The action as the caller may see it (read in the write's transaction); 404 when it does not exist. */
export async function readAction(db: Queryable, principal: Principal | null, actionId: number): Promise<QueuedAction> {
  const action = await actionWithReport(db, principal, actionId);
  if (!action) throw errors.actionNotFound(actionId);
  return action;
}

export const ACTION_STATUSES = ['pending', 'processing', 'success', 'failed', 'cancelled'] as const;

/** A `status` query parameter: a comma list of action statuses, each known (400 otherwise). */
export function parseActionStatuses(list: string): string[] {
  const values = list.split(',').map((s) => s.trim());
  const bad = values.find((s) => !(ACTION_STATUSES as readonly string[]).includes(s));
  if (bad !== undefined) throw errors.validation(`querystring.status: unknown status "${bad}" (allowed: ${ACTION_STATUSES.join(', ')})`);
  return [...new Set(values)];
}

/** Pending or processing to cancelled (an admin's decision): the bot's completion then answers 409. */
export async function cancelAction(tx: Tx, actionId: number, reason: string): Promise<ReportActionRow> {
  const { rows } = await tx.query<ReportActionRow>(
    `update report_actions set status = 'cancelled', result_note = $2::text, claimed_at = null, completed_at = now(), updated_at = now()
     where action_id = $1::bigint returning *`,
    [actionId, reason],
  );
  return rows[0]!;
}

/**
 * Actions in the given statuses, oldest first (queue order), with their report basics, and how
 * many match in all. `queue` undefined means both queues.
 */
export async function listActions(
  db: Queryable,
  principal: Principal | null,
  options: { queue?: QueueName; statuses: readonly string[]; limit: number; offset?: number },
): Promise<{ count: number; actions: QueuedAction[] }> {
  const where = `a.status = any($1::text[])${options.queue ? ' and a.queue = $4::text' : ''}`;
  const values: unknown[] = [options.statuses, options.limit, options.offset ?? 0];
  if (options.queue) values.push(options.queue);
  const [page, total] = await Promise.all([
    db.query<QueuedAction>(
      `${WITH_REPORT} from report_actions a left join reports r on r.report_id = a.report_id
       where ${where} order by a.created_at, a.action_id limit $2::int offset $3::int`,
      values,
    ),
    db.query<{ count: number }>(`select count(*)::int as count from report_actions a where ${where.replace(/\$4/g, '$2')}`, options.queue ? [options.statuses, options.queue] : [options.statuses]),
  ]);
  return { count: total.rows[0]!.count, actions: page.rows.map((action) => shownAction(principal, action)) };
}
