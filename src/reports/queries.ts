// Report rows and the full report payload (spec: Reports). Shared by the report, action, contact
// and evidence routes; every write goes through the caller's transaction.
import type { Queryable, Tx } from '../platform/db/types.js';
import type { Actor } from '../platform/events.js';

/** The complete display status set (docs/decisions.md). */
export const REPORT_STATUSES = ['Open', 'Under Investigation', 'Pending', 'Appealed', 'Validated', 'Invalidated'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];
/** What PATCH /reports/<id>/update may set (spec: States and transitions, Report). */
export const SETTABLE_STATUSES = ['Open', 'Pending', 'Appealed'] as const;

export interface ReportRow {
  report_id: string;
  reporter: string;
  reported: string;
  reason: string;
  notes: string;
  evidence: string;
  reporter_name: string | null;
  reported_name: string | null;
  status: ReportStatus;
  assigned_agent: string | null;
  is_supervisor: boolean;
  thread_id: string | null;
  evidence_url: string | null;
  investigation_started_at: string | null;
  created_at: string;
  updated_at: string;
}

const REPORT_COLUMN_NAMES = [
  'report_id', 'reporter', 'reported', 'reason', 'notes', 'evidence', 'reporter_name', 'reported_name', 'status',
  'assigned_agent', 'is_supervisor', 'thread_id', 'evidence_url', 'investigation_started_at', 'created_at', 'updated_at',
];
export const reportColumns = (alias?: string) => REPORT_COLUMN_NAMES.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

export async function findReport(db: Queryable, reportId: string, options: { forUpdate?: boolean } = {}): Promise<ReportRow | undefined> {
  const { rows } = await db.query<ReportRow>(
    `select ${reportColumns()} from reports where report_id = $1::text${options.forUpdate ? ' for update' : ''}`,
    [reportId],
  );
  return rows[0];
}

/** Which bot queue a report's actions go to. */
export const queueOf = (report: Pick<ReportRow, 'is_supervisor'>) => (report.is_supervisor ? 'supervisor' : 'operator');

const actorColumns = (actor: Actor) =>
  actor.kind === 'agent' ? [actor.kind, actor.chatId, actor.name ?? null] : [actor.kind, null, actor.kind === 'bot' ? 'Automation bot' : 'System'];

export interface TimelineRow {
  id: number;
  report_id: string;
  event: string;
  actor_kind: string;
  actor_chat_id: string | null;
  actor_name: string | null;
  created_at: string;
}

export async function addTimeline(tx: Tx, reportId: string, event: string, actor: Actor): Promise<TimelineRow> {
  const { rows } = await tx.query<TimelineRow>(
    `insert into report_timeline (report_id, event, actor_kind, actor_chat_id, actor_name)
     values ($1::text, $2::text, $3::text, $4::text, $5::text) returning *`,
    [reportId, event, ...actorColumns(actor)],
  );
  return rows[0]!;
}

export async function touchReport(tx: Tx, reportId: string): Promise<void> {
  await tx.query('update reports set updated_at = now() where report_id = $1::text', [reportId]);
}

export interface FullReport extends ReportRow {
  assigned_agent_name: string | null;
  notes_list: { id: number; note: string; author_chat_id: string | null; author_name: string | null; created_at: string }[];
  evidence_list: { id: number; description: string; url: string; submitted_by: string | null; submitted_by_id: string | null; submitted_by_name: string | null; created_at: string }[];
  timeline: TimelineRow[];
  chat_profiles: Record<string, unknown>[];
}

/** The full report: base fields, notes, evidence, timeline, chat profile snapshots, resolved names. */
export async function loadFullReport(db: Queryable, reportId: string): Promise<FullReport | undefined> {
  const report = await findReport(db, reportId);
  if (!report) return undefined;
  const [assigned, notes, evidence, timeline, profiles] = await Promise.all([
    report.assigned_agent
      ? db.query<{ name: string | null }>('select name from agents where chat_id = $1::text', [report.assigned_agent])
      : Promise.resolve({ rows: [] as { name: string | null }[] }),
    db.query<FullReport['notes_list'][number]>(
      `select id, note, author_chat_id, author_name, created_at from report_notes where report_id = $1::text order by created_at, id`,
      [reportId],
    ),
    db.query<FullReport['evidence_list'][number]>(
      `select e.id, e.description, e.url, e.submitted_by, e.submitted_by as submitted_by_id, a.name as submitted_by_name, e.created_at
       from report_evidence e left join agents a on a.chat_id = e.submitted_by
       where e.report_id = $1::text order by e.created_at, e.id`,
      [reportId],
    ),
    db.query<TimelineRow>(`select * from report_timeline where report_id = $1::text order by created_at, id`, [reportId]),
    db.query<Record<string, unknown>>(
      `select chat_id, username, global_name, avatar, profile, updated_at from chat_profiles where chat_id = any($1::text[]) order by chat_id`,
      [[report.reporter, report.reported]],
    ),
  ]);
  return {
    ...report,
    assigned_agent_name: assigned.rows[0]?.name ?? null,
    notes_list: notes.rows,
    evidence_list: evidence.rows,
    timeline: timeline.rows,
    chat_profiles: profiles.rows,
  };
}
