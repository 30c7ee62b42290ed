// The report action queue (spec: Report action queues): rows are enqueued inside the transaction
// of the change that asks the bot to act, so a rolled-back change never reaches the bot.
import type { Tx } from '../platform/db/types.js';

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
