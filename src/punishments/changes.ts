// Queries of the punishment routes beyond the shared data layer (queries.ts): the list's total,
// the stored profile, field updates and the revoke move. Writes take a Tx: they run under the
// punishment's row lock (lockPunishment).
import { profileVisibleToSql, punishmentReportIdSql } from '../platform/auth/report-access.js';
import type { Queryable, Tx } from '../platform/db/types.js';
import type { Principal } from '../platform/auth/principal.js';
import { punishmentColumns, punishmentFilterSql, type PunishmentFilter, type PunishmentRow, type StoredProfile } from './queries.js';

export async function countPunishments(db: Queryable, principal: Principal | null, filter: Omit<PunishmentFilter, 'limit' | 'offset'>): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    `select count(*)::int as count from punishments p where ${punishmentFilterSql(principal, filter)}`,
    [filter.user_id ?? null, filter.status ?? null],
  );
  return rows[0]!.count;
}

/** The stored profile, unless it is a party's of a report the caller may not see (report-access.ts). */
export async function findStoredProfile(db: Queryable, principal: Principal | null, chatId: string): Promise<StoredProfile | undefined> {
  const { rows } = await db.query<StoredProfile>(
    `select chat_id, username, global_name, avatar, updated_at from chat_profiles where chat_id = $1::text and ${profileVisibleToSql(principal, 'chat_profiles.chat_id')}`,
    [chatId],
  );
  return rows[0];
}

/** The report a punishment cites: whether it exists, and whether it is supervisor-flagged. */
export async function findCitedReport(db: Queryable, reportId: string): Promise<{ report_id: string; is_supervisor: boolean } | undefined> {
  const { rows } = await db.query<{ report_id: string; is_supervisor: boolean }>(
    'select report_id, is_supervisor from reports where report_id = $1::text',
    [reportId],
  );
  return rows[0];
}

/** The report an event about the punishment names: the one it cites, or the deleted one it cited. */
export async function eventReportId(tx: Tx, punishmentId: string): Promise<string | null> {
  const { rows } = await tx.query<{ report_id: string | null }>(
    `select ${punishmentReportIdSql('p')} as report_id from punishments p where p.punishment_id = $1::text`,
    [punishmentId],
    { name: 'punishment_event_report' },
  );
  return rows[0]?.report_id ?? null;
}

/** Columns a PATCH may change, with the cast of each parameter. */
export const UPDATABLE_COLUMNS = {
  username: 'text',
  detailed_reason: 'text',
  duration: 'text',
  expires_at: 'timestamptz',
  status: 'text',
  evidence: 'text',
  notes: 'text',
  report_id: 'text',
} as const;
export type UpdatableColumn = keyof typeof UPDATABLE_COLUMNS;
export type PunishmentChanges = Partial<Record<UpdatableColumn, string | null>>;

export async function updatePunishmentFields(tx: Tx, punishmentId: string, changes: PunishmentChanges): Promise<PunishmentRow> {
  const columns = Object.keys(changes) as UpdatableColumn[];
  // Column names come from UPDATABLE_COLUMNS only; every value is a parameter.
  const sets = columns.map((c, i) => `${c} = $${i + 2}::${UPDATABLE_COLUMNS[c]}`);
  const { rows } = await tx.query<PunishmentRow>(
    `update punishments set ${[...sets, 'updated_at = now()'].join(', ')} where punishment_id = $1::text returning ${punishmentColumns()}`,
    [punishmentId, ...columns.map((c) => changes[c] ?? null)],
  );
  return rows[0]!;
}

export async function revokePunishment(tx: Tx, punishmentId: string, revokedBy: string, reason: string): Promise<PunishmentRow> {
  const { rows } = await tx.query<PunishmentRow>(
    `update punishments set status = 'Revoked', revoked_at = now(), revoked_by = $2::text, revoke_reason = $3::text, updated_at = now()
     where punishment_id = $1::text returning ${punishmentColumns()}`,
    [punishmentId, revokedBy, reason],
  );
  return rows[0]!;
}
