// Who sees and who changes what of a report: the one policy (spec Authentication 6 and 8; issue 28).
// Every route that returns anything derived from a report asks it, and every route that changes a
// report asks it under the report's row lock. It decides from the report's current state, read
// when the question is asked; nothing a row copied when it was written (an event's or a queue
// item's flag) ever decides.
//
// Seeing. The bot's key and sessions of supervisor rank see every report; everyone else sees a
// supervisor-flagged report's existence at most (the list placeholder), never what it carries.
// In SQL the flag is reportFlaggedSql: the live row's flag, or the pre-image's of a deleted report,
// so rows that outlive their report stay as hidden as it was.
//
// Reading a report (read) asks only the supervisor rule. Changing it (sessions; the bot is not
// gated by assignment):
//   update    the report's fields other than the assignment: the assigned agent only
//   reassign  the assignment: reassign_docket (Head Investigator rank), assigned or not
//   act       report actions and the investigation routes: the assigned agent only
//   claim     any agent who may see the report (the claim itself requires it unassigned)
//   note, evidence   the assigned agent, or supervisor rank (the spec states it for these)
//   timeline  the assigned agent only ("the assignment gate")
//   contact   reading, replying to and closing the contact thread: the assigned agent only
//   delete    delete_docket (the route's permission), no assignment
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../db/types.js';
import { errors } from '../errors.js';
import type { Principal } from './principal.js';
import { hasPermission, hasRank, isSupervisorRank, type Rank } from './permissions.js';

export type ReportWork = 'read' | 'update' | 'reassign' | 'act' | 'claim' | 'note' | 'evidence' | 'timeline' | 'contact' | 'delete';

/** What the policy needs of a report: its current row. */
export interface ReportAccessFacts {
  is_supervisor: boolean;
  assigned_agent: string | null;
}

const SUPERVISOR_RANK_MAY: ReadonlySet<ReportWork> = new Set(['note', 'evidence']);
const UNGATED: ReadonlySet<ReportWork> = new Set(['read', 'claim', 'delete']);

/** Fields of PATCH /reports/<id>/update that the bot alone may change (spec: Reports). */
export const BOT_ONLY_REPORT_FIELDS = ['is_supervisor', 'notes', 'reason'] as const;

/** The key and sessions of supervisor rank see supervisor-flagged reports; nobody else does. */
export function seesFlaggedReports(principal: Principal | null | undefined): boolean {
  if (principal?.kind === 'key') return true;
  return principal?.kind === 'session' && isSupervisorRank(principal.agent.agent_rank);
}

/**
 * Whether a list filtered on these values must keep to rows of reports not flagged: a placeholder
 * matches a filter only by what it shows, so a filter on anything it hides (a punishment's user,
 * a report's open contact thread) never matches one below supervisor rank, in rows or totals.
 */
export function filterKeepsToUnflagged(principal: Principal | null | undefined, ...hiddenFieldValues: unknown[]): boolean {
  return !seesFlaggedReports(principal) && hiddenFieldValues.some((value) => value !== undefined);
}

/**
 * A flagged report of one of those ids (text expressions; a null names none): its live row, or a
 * deleted report's pre-image. One index probe per table for all the ids (= any of an array):
 * reports_flagged_idx and deleted_reports_flagged_idx, both partial, so both index-only.
 */
const ids = (reportIds: readonly string[]) => (reportIds.length === 1 ? `= ${reportIds[0]}` : `in (${reportIds.join(', ')})`);
const flaggedLive = (reportIds: readonly string[]) => `select 1 from reports fr where fr.report_id ${ids(reportIds)} and fr.is_supervisor`;
const flaggedDeleted = (reportIds: readonly string[]) =>
  `select 1 from deleted_reports fd where fd.report_id ${ids(reportIds)} and (fd.pre_image ->> 'is_supervisor')::boolean`;

/**
 * SQL: one of the reports named by the text expressions is flagged now: its live row is, or a
 * report of that id was deleted while flagged, so rows that outlive a report stay as hidden as it
 * was, even under a reused id.
 */
export const anyReportFlaggedSql = (reportIds: readonly string[]) => `(exists (${flaggedLive(reportIds)}) or exists (${flaggedDeleted(reportIds)}))`;
export const reportFlaggedSql = (reportId: string) => anyReportFlaggedSql([reportId]);

/**
 * SQL: the report id a punishment (table punishments, by its alias) cites, or cited before that
 * report was deleted (the deletion clears report_id and keeps deleted_report): what the events
 * written about the punishment name, so that they stay as hidden as its report.
 */
export const punishmentReportIdSql = (alias: string) =>
  `coalesce(${alias}.report_id, (select dr.report_id from deleted_reports dr where dr.id = ${alias}.deleted_report))`;

/**
 * SQL: the punishment (table punishments, by its alias) cites a flagged report: the live report it
 * cites, or the deleted report it cited (its report_id is cleared then and deleted_report kept).
 */
export const punishmentFlaggedSql = (alias: string) =>
  `(${reportFlaggedSql(`${alias}.report_id`)} or exists (select 1 from deleted_reports dp where dp.id = ${alias}.deleted_report and (dp.pre_image ->> 'is_supervisor')::boolean))`;

/**
 * SQL that holds for the rows the principal may see, given the expressions naming the reports
 * each row derives from (a null names none); `true` for those who see every report. Written as a
 * conjunction of NOT EXISTS so that the planner joins it (anti-joins with index probes) instead of
 * running a subplan per row, whose estimates would make every search look costly.
 */
export function visibleToSql(principal: Principal | null | undefined, reportIdExpressions: readonly string[]): string {
  if (seesFlaggedReports(principal)) return 'true';
  return `not exists (${flaggedLive(reportIdExpressions)}) and not exists (${flaggedDeleted(reportIdExpressions)})`;
}

/**
 * The reports a canonical event (table events, by its alias or name) is about: its report id, the
 * report a punishment's before names when it moved to another one (its after names the event's),
 * and the case a retention erasure of 0.3.0 names in its target only: its event was written
 * without the report id, and sealed rows are not rewritten (issue 38, finding 5).
 */
export function eventReportIds(alias: string): string[] {
  const column = (name: string) => `${alias}.${name}`;
  return [
    column('report_id'),
    `nullif(${column('before')} ->> 'report_id', ${column('report_id')})`,
    `case when ${column('type')} = 'admin.case_erased' and ${column('report_id')} is null then ${column('data')} ->> 'target' end`,
  ];
}

/**
 * SQL: an admin audit row's action (or an event's type) is one whose row counts a person's rows
 * across all their reports, flagged ones among them: a subject's export and erasure.
 */
export const countingActionSql = (action: string) => `${action} in ('admin.subject_exported', 'admin.subject_erased')`;

/**
 * Below supervisor rank every counting action's row is shown without its counts (`total`,
 * `counts`), whatever the person's reports: withholding them only where a flagged report is
 * counted would answer whether one is (issue 38, finding 5).
 */
export const withholdsCounts = (principal: Principal | null | undefined): boolean => !seesFlaggedReports(principal);

/** SQL: the `after` (jsonb) of an admin audit row or event of that action (or type) as the principal is shown it. */
export function shownAfterSql(principal: Principal | null | undefined, action: string, after: string): string {
  if (!withholdsCounts(principal)) return after;
  return `case when ${countingActionSql(action)} then ${after} - '{total,counts}'::text[] else ${after} end`;
}

/**
 * SQL: a user lookup's person as the principal is shown it. Below supervisor rank only the agent
 * who asked for the lookup sees who it is about, whoever the person is (the queue list,
 * discipline/queries.ts, decides the same): the trail's copies follow, the admin audit row of the
 * request (its target) and the lookup's events (their data's user_id). `isLookup` and `asker` are
 * SQL of the row; `withheld` is what stands in for `shown`.
 */
export function shownLookupSql(principal: Principal | null | undefined, isLookup: string, asker: string, shown: string, withheld: string): string {
  if (seesFlaggedReports(principal)) return shown;
  return `case when ${lookupWithheldSql(principal, isLookup, asker)} then ${withheld} else ${shown} end`;
}

/** SQL: the row is a user lookup's whose person the principal is not shown (seesLookupPerson as SQL); `false` for those shown every one. */
export function lookupWithheldSql(principal: Principal | null | undefined, isLookup: string, asker: string): string {
  if (seesFlaggedReports(principal)) return 'false';
  // A chat id is digits (the session's agent row); quoted all the same.
  const me = principal?.kind === 'session' ? `'${principal.agent.chat_id.replace(/'/g, "''")}'` : 'null';
  return `((${isLookup}) and ${asker} is distinct from ${me})`;
}

/**
 * Whether the principal is shown who a user lookup asked for by `requestedBy` is about: supervisor
 * rank and the key always, anyone else only when they asked for it (shownLookupSql in SQL).
 */
export function seesLookupPerson(principal: Principal | null | undefined, requestedBy: string | null): boolean {
  if (seesFlaggedReports(principal)) return true;
  return principal?.kind === 'session' && requestedBy !== null && principal.agent.chat_id === requestedBy;
}

/**
 * SQL that holds for chat ids whose stored profile the principal may see: not those of a party
 * (reporter or reported) of a report flagged now or deleted while flagged.
 */
export function profileVisibleToSql(principal: Principal | null | undefined, chatId: string): string {
  if (seesFlaggedReports(principal)) return 'true';
  return [
    `not exists (select 1 from reports pr where pr.is_supervisor and pr.reporter = ${chatId})`,
    `not exists (select 1 from reports pr where pr.is_supervisor and pr.reported = ${chatId})`,
    `not exists (select 1 from deleted_reports pd where (pd.pre_image ->> 'is_supervisor')::boolean and ${chatId} in (pd.pre_image ->> 'reporter', pd.pre_image ->> 'reported'))`,
  ].join(' and ');
}

/** The report's current flag and assignee, read when the question is asked; undefined when it does not exist. */
export async function findReportAccessFacts(db: Queryable, reportId: string): Promise<ReportAccessFacts | undefined> {
  const { rows } = await db.query<ReportAccessFacts>('select is_supervisor, assigned_agent from reports where report_id = $1::text', [reportId], { name: 'report_access_facts' });
  return rows[0];
}

/** Whether the punishment of that id cites a flagged report (live or deleted); false when it does not exist. */
export async function punishmentFlagged(db: Queryable, punishmentId: string): Promise<boolean> {
  const { rows } = await db.query<{ flagged: boolean }>(
    `select ${punishmentFlaggedSql('p')} as flagged from punishments p where p.punishment_id = $1::text`,
    [punishmentId],
    { name: 'punishment_flagged' },
  );
  return rows[0]?.flagged ?? false;
}

export function maySeeReport(principal: Principal | null | undefined, report: Pick<ReportAccessFacts, 'is_supervisor'>): boolean {
  return !report.is_supervisor || seesFlaggedReports(principal);
}

const supervisorOnly = () => errors.forbidden('Supervisor reports require supervisor rank', 'SUPERVISOR_ONLY');

/** 403 unless the caller may see the report (or a report it is about to create flagged). */
export function assertMaySeeReport(request: FastifyRequest, report: Pick<ReportAccessFacts, 'is_supervisor'>): void {
  if (!maySeeReport(request.principal, report)) throw supervisorOnly();
}

/** Whether the caller may do this work on the report as it is now; the refusal when not. */
function refusal(request: FastifyRequest, report: ReportAccessFacts, work: ReportWork) {
  const principal = request.principal;
  if (!maySeeReport(principal, report)) return supervisorOnly();
  if (principal?.kind !== 'session') return undefined;
  const agent = principal.agent;
  if (work === 'reassign') return hasPermission(agent, 'reassign_docket') ? undefined : errors.insufficientClearance();
  if (UNGATED.has(work)) return undefined;
  if (report.assigned_agent !== null && report.assigned_agent === agent.chat_id) return undefined;
  if (SUPERVISOR_RANK_MAY.has(work) && isSupervisorRank(agent.agent_rank)) return undefined;
  return errors.forbidden('Only the assigned agent may do this', 'NOT_ASSIGNED');
}

/** 403 unless the caller may do this work on the report (run it on the locked row). */
export function assertMayWorkOnReport(request: FastifyRequest, report: ReportAccessFacts, work: ReportWork): void {
  const refused = refusal(request, report, work);
  if (refused) throw refused;
}

/**
 * PATCH /reports/<id>/update, before the report is read: the bot-only fields are refused to
 * sessions, and the assignment to sessions without reassign_docket, whatever the report.
 */
export function assertMaySendReportFields(request: FastifyRequest, fields: readonly string[]): void {
  const principal = request.principal;
  if (principal?.kind !== 'session') return;
  const botOnly = BOT_ONLY_REPORT_FIELDS.find((field) => fields.includes(field));
  if (botOnly) throw errors.forbidden(`body.${botOnly} may be changed by the bot only`, 'BOT_ONLY_FIELD');
  if (fields.includes('assigned_agent') && !hasPermission(principal.agent, 'reassign_docket')) throw errors.insufficientClearance();
}

/**
 * PATCH /reports/<id>/update on the locked row: the assignment is `reassign` work and every other
 * field `update` work, each asked on its own, so sending the current assignee beside other fields
 * exempts none of them.
 */
export function assertMayUpdateReport(request: FastifyRequest, report: ReportAccessFacts, fields: readonly string[]): void {
  assertMaySendReportFields(request, fields);
  assertMaySeeReport(request, report);
  if (fields.includes('assigned_agent')) assertMayWorkOnReport(request, report, 'reassign');
  // An empty body is update work too: it is refused as such before it is refused as empty.
  if (fields.length === 0 || fields.some((field) => field !== 'assigned_agent')) assertMayWorkOnReport(request, report, 'update');
}

/** Spec Authentication 6: sessions work the supervisor action queue from Senior Agent rank. */
export const SUPERVISOR_QUEUE_RANK: Rank = 'Senior Agent';

/** 403 unless the caller may work actions of that queue (the key always may). */
export function assertMayWorkQueue(request: FastifyRequest, queue: 'operator' | 'supervisor'): void {
  const principal = request.principal;
  if (queue === 'supervisor' && principal?.kind === 'session' && !hasRank(principal.agent.agent_rank, SUPERVISOR_QUEUE_RANK)) {
    throw errors.forbidden(`${SUPERVISOR_QUEUE_RANK} rank required`, 'RANK_REQUIRED');
  }
}
