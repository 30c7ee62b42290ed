// Report rows and the full report payload (spec: Reports). Shared by the report, action, contact
// and evidence routes; every write goes through the caller's transaction.
import type { Queryable, Tx } from '../platform/db/types.js';
import type { Actor } from '../platform/events.js';
import type { Principal } from '../platform/auth/principal.js';
import { profileVisibleToSql, seesFlaggedReports } from '../platform/auth/report-access.js';

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

const TIMELINE_COLUMNS = 'id, report_id, event, actor_kind, actor_chat_id, actor_name, created_at';

export async function addTimeline(tx: Tx, reportId: string, event: string, actor: Actor): Promise<TimelineRow> {
  const { rows } = await tx.query<TimelineRow>(
    `insert into report_timeline (report_id, event, actor_kind, actor_chat_id, actor_name)
     values ($1::text, $2::text, $3::text, $4::text, $5::text) returning ${TIMELINE_COLUMNS}`,
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

/**
 * The full report: base fields, notes, evidence, timeline, chat profile snapshots, resolved names.
 * One statement (one round trip, also inside a transaction), the lists built as JSON in SQL.
 */
/**
 * The stored chat profiles of report r's parties that the principal may see: not a party's of a
 * report flagged now (or deleted flagged), below supervisor rank (report-access.ts), whichever
 * report names them.
 */
const chatProfilesSql = (principal: Principal | null) => `coalesce((select jsonb_agg(jsonb_build_object('chat_id', p.chat_id,
         'username', p.username, 'global_name', p.global_name, 'avatar', p.avatar, 'profile', p.profile,
         'updated_at', iso_utc(p.updated_at)) order by p.chat_id)
       from chat_profiles p where p.chat_id in (r.reporter, r.reported) and ${profileVisibleToSql(principal, 'p.chat_id')}), '[]'::jsonb)`;

/**
 * The pre-image as its event carries it into the sealed trail: each chat profile without the
 * whole object the bot delivered (`profile`), whose fields beyond the named ones no erasure could
 * reach in a sealed row (only named keys are erasable: audit-chain/personal-fields.ts). The
 * deleted report's own pre-image keeps it, and an erasure empties it there (issue 39, finding 7).
 */
export function sealedPreImage(preImage: FullReport): Omit<FullReport, 'chat_profiles'> & { chat_profiles: Record<string, unknown>[] } {
  return { ...preImage, chat_profiles: preImage.chat_profiles.map(({ profile: _profile, ...named }) => named) };
}

/** Everything, for what the service keeps rather than answers (a deleted report's pre-image). */
export const WHOLE: Principal = { kind: 'key' };

export async function loadFullReport(db: Queryable, principal: Principal | null, reportId: string): Promise<FullReport | undefined> {
  const { rows } = await db.query<FullReport>(
    `select ${reportColumns('r')},
       (select a.name from agents a where a.chat_id = r.assigned_agent) as assigned_agent_name,
       coalesce((select jsonb_agg(jsonb_build_object('id', n.id, 'note', n.note, 'author_chat_id', n.author_chat_id,
                  'author_name', n.author_name, 'created_at', iso_utc(n.created_at)) order by n.created_at, n.id)
                 from report_notes n where n.report_id = r.report_id), '[]'::jsonb) as notes_list,
       coalesce((select jsonb_agg(jsonb_build_object('id', e.id, 'description', e.description, 'url', e.url,
                  'submitted_by', e.submitted_by, 'submitted_by_id', e.submitted_by, 'submitted_by_name', a.name,
                  'created_at', iso_utc(e.created_at)) order by e.created_at, e.id)
                 from report_evidence e left join agents a on a.chat_id = e.submitted_by
                 where e.report_id = r.report_id), '[]'::jsonb) as evidence_list,
       coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'report_id', t.report_id, 'event', t.event,
                  'actor_kind', t.actor_kind, 'actor_chat_id', t.actor_chat_id, 'actor_name', t.actor_name,
                  'created_at', iso_utc(t.created_at)) order by t.created_at, t.id)
                 from report_timeline t where t.report_id = r.report_id and t.report_life = r.creation_order), '[]'::jsonb) as timeline,
       ${chatProfilesSql(principal)} as chat_profiles
     from reports r where r.report_id = $1::text`,
    [reportId],
    // Planning its five subqueries costs more than running them for one report. One name per
    // form of the text: with the model's profile condition, or without it for those who see all.
    { name: `full_report_${seesFlaggedReports(principal) ? 'all' : 'model'}` },
  );
  return rows[0];
}

// --- Report CRUD (POST /reports/create, PATCH update, DELETE, chat-profiles) ---

export interface NewReport {
  report_id: string;
  reporter: string;
  reported: string;
  reason: string;
  notes: string;
  evidence: string;
  reporter_name?: string | undefined;
  reported_name?: string | undefined;
  status?: ReportStatus | undefined;
  assigned_agent?: string | undefined;
  is_supervisor?: boolean | undefined;
  thread_id?: string | undefined;
  evidence_url?: string | undefined;
}

/** A new report with what its full payload needs besides the rows its creation writes. */
export type CreatedReport = ReportRow & Pick<FullReport, 'assigned_agent_name' | 'chat_profiles'>;

/**
 * The new row, or undefined when the id is taken (nothing written then). The same statement
 * resolves the assigned agent's name and any chat profiles already on record, so that creation
 * needs no read-back. A report created under investigation has its investigation in progress
 * from now, as the investigate action would set it.
 */
export async function insertReport(tx: Tx, principal: Principal | null, report: NewReport): Promise<CreatedReport | undefined> {
  const { rows } = await tx.query<CreatedReport>(
    `with r as (
       insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, status,
                            assigned_agent, is_supervisor, thread_id, evidence_url, investigation_started_at)
       values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, coalesce($9::text, 'Open'),
               $10::text, coalesce($11::boolean, false), $12::text, $13::text,
               case when $9::text = 'Under Investigation' then now() end)
       on conflict (report_id) do nothing
       returning ${reportColumns()})
     select ${reportColumns('r')},
       (select a.name from agents a where a.chat_id = r.assigned_agent) as assigned_agent_name,
       ${chatProfilesSql(principal)} as chat_profiles
     from r`,
    [
      report.report_id, report.reporter, report.reported, report.reason, report.notes, report.evidence,
      report.reporter_name ?? null, report.reported_name ?? null, report.status ?? null, report.assigned_agent ?? null,
      report.is_supervisor ?? null, report.thread_id ?? null, report.evidence_url ?? null,
    ],
  );
  return rows[0];
}

export async function insertInitialEvidence(
  tx: Tx,
  reportId: string,
  url: string,
  submittedBy: string | null,
): Promise<FullReport['evidence_list'][number]> {
  const { rows } = await tx.query<FullReport['evidence_list'][number]>(
    `with e as (
       insert into report_evidence (report_id, description, url, submitted_by)
       values ($1::text, 'Initial evidence', $2::text, $3::text) returning *)
     select e.id, e.description, e.url, e.submitted_by, e.submitted_by as submitted_by_id, a.name as submitted_by_name, e.created_at
     from e left join agents a on a.chat_id = e.submitted_by`,
    [reportId, url, submittedBy],
  );
  return rows[0]!;
}

/**
 * The full payload of a report created in this transaction, from the rows its creation wrote:
 * nothing else can hang off it before the commit, so it equals what loadFullReport would read.
 */
export function fullReportOfCreated(
  created: CreatedReport,
  timeline: TimelineRow,
  evidence: FullReport['evidence_list'][number] | undefined,
): FullReport {
  return { ...created, notes_list: [], evidence_list: evidence ? [evidence] : [], timeline: [timeline], chat_profiles: created.chat_profiles };
}

/**
 * Columns PATCH /reports/<id>/update and the admin correction may write, with their casts (the set
 * is closed: no SQL from input); each route's schema decides which of them its callers may send.
 */
const UPDATABLE_COLUMNS = {
  reporter: 'text',
  reported: 'text',
  reporter_name: 'text',
  reported_name: 'text',
  notes: 'text',
  reason: 'text',
  status: 'text',
  assigned_agent: 'text',
  is_supervisor: 'boolean',
  investigation_started_at: 'timestamptz',
} as const;
export type ReportChanges = Partial<Record<keyof typeof UPDATABLE_COLUMNS, string | boolean | null>>;

export async function updateReportFields(tx: Tx, reportId: string, changes: ReportChanges): Promise<ReportRow> {
  const entries = Object.entries(changes).filter(([column]) => column in UPDATABLE_COLUMNS);
  const sets = entries.map(([column], i) => `${column} = $${i + 2}::${UPDATABLE_COLUMNS[column as keyof typeof UPDATABLE_COLUMNS]}`);
  const { rows } = await tx.query<ReportRow>(
    `update reports set ${[...sets, 'updated_at = now()'].join(', ')} where report_id = $1::text returning ${reportColumns()}`,
    [reportId, ...entries.map(([, value]) => value)],
  );
  return rows[0]!;
}

/**
 * Writes the forensic pre-image, then removes the report (its working rows cascade). Writing the
 * pre-image hands it what outlives the report, its timeline and the punishments citing it
 * (migration 0025), so a report id used again later starts with nothing of this one.
 */
export async function deleteReportWithPreImage(
  tx: Tx,
  input: { reportId: string; preImage: unknown; reason: string; deletedBy: Actor; correlationId: string },
): Promise<{ deleted_at: string }> {
  const { rows } = await tx.query<{ deleted_at: string }>(
    `insert into deleted_reports (report_id, pre_image, reason, deleted_by_kind, deleted_by_chat_id, correlation_id)
     values ($1::text, $2::jsonb, $3::text, $4::text, $5::text, $6::text) returning deleted_at`,
    [
      input.reportId,
      JSON.stringify(input.preImage),
      input.reason,
      input.deletedBy.kind === 'agent' ? 'agent' : 'bot',
      input.deletedBy.kind === 'agent' ? input.deletedBy.chatId : null,
      input.correlationId,
    ],
  );
  await tx.query('delete from reports where report_id = $1::text', [input.reportId]);
  return rows[0]!;
}

export interface ChatProfileRow {
  chat_id: string;
  username: string | null;
  global_name: string | null;
  avatar: string | null;
  profile: Record<string, unknown>;
  updated_at: string;
}

/** One snapshot per chat id: the latest delivery replaces the stored one. */
export async function upsertChatProfile(tx: Tx, profile: { chat_id: string; username?: string | null; global_name?: string | null; avatar?: string | null }): Promise<ChatProfileRow> {
  const { rows } = await tx.query<ChatProfileRow>(
    `insert into chat_profiles (chat_id, username, global_name, avatar, profile)
     values ($1::text, $2::text, $3::text, $4::text, $5::jsonb)
     on conflict (chat_id) do update set username = excluded.username, global_name = excluded.global_name,
       avatar = excluded.avatar, profile = excluded.profile, updated_at = now()
     returning chat_id, username, global_name, avatar, profile, updated_at`,
    [profile.chat_id, profile.username ?? null, profile.global_name ?? null, profile.avatar ?? null, JSON.stringify(profile)],
  );
  return rows[0]!;
}
