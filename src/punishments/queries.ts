// Punishments (spec: Punishments and discipline; States and transitions, Punishment). Statuses:
// Active and Appealed are in force; Expired is set by the expiry sweep once expires_at passes;
// Revoked only by the revoke route. Every change that the chat platform must hear of enqueues a
// discipline delivery in the same transaction.
import { randomInt } from 'node:crypto';
import { filterKeepsToUnflagged, maySeeReport, profileVisibleToSql, punishmentFlaggedSql, punishmentReportIdSql } from '../platform/auth/report-access.js';
import type { Queryable, Tx } from '../platform/db/types.js';
import type { Principal } from '../platform/auth/principal.js';

export const PUNISHMENT_STATUSES = ['Active', 'Appealed', 'Expired', 'Revoked'] as const;
export type PunishmentStatus = (typeof PUNISHMENT_STATUSES)[number];
/** Statuses a client may set (creation and PATCH); Expired and Revoked are the service's own moves. */
export const SETTABLE_PUNISHMENT_STATUSES = ['Active', 'Appealed'] as const;
export const IN_FORCE: ReadonlySet<PunishmentStatus> = new Set(['Active', 'Appealed']);

export interface PunishmentRow {
  punishment_id: string;
  user_id: string;
  username: string | null;
  reason: string;
  detailed_reason: string | null;
  duration: string | null;
  expires_at: string | null;
  status: PunishmentStatus;
  evidence: string | null;
  notes: string | null;
  report_id: string | null;
  issued_by: string | null;
  issued_by_name: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  revoke_reason: string | null;
  expired_at: string | null;
  created_at: string;
  updated_at: string;
}

// The row's columns by name: creation_order (migration 0019) only breaks ties in the list's order
// and stays out of answers, audit rows and events.
const PUNISHMENT_COLUMN_NAMES = ['punishment_id', 'user_id', 'username', 'reason', 'detailed_reason', 'duration', 'expires_at',
  'status', 'evidence', 'notes', 'report_id', 'issued_by', 'issued_by_name', 'revoked_at', 'revoked_by', 'revoke_reason',
  'expired_at', 'created_at', 'updated_at'] as const satisfies readonly (keyof PunishmentRow)[];
/** The select list of a punishment row, optionally qualified by a table alias. */
export const punishmentColumns = (alias?: string) => PUNISHMENT_COLUMN_NAMES.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

export interface DeliveryState {
  item_id: number;
  kind: string;
  status: string;
  attempts: number;
  result_note: string | null;
  last_error: string | null;
  ref: string | null;
  available_at: string;
  completed_at: string | null;
  updated_at: string;
}

export interface StoredProfile {
  chat_id: string;
  username: string | null;
  global_name: string | null;
  avatar: string | null;
  updated_at: string;
}

/** A punishment as every route answers it: the row, its latest delivery, and the user's profile. */
export interface Punishment extends PunishmentRow {
  delivery: DeliveryState | null;
  profile: StoredProfile | null;
}

/** The punishment row of alias `p` as a JSON object (timestamps as the drivers render them). */
export const punishmentJson = (p: string) => `jsonb_build_object(
  'punishment_id', ${p}.punishment_id, 'user_id', ${p}.user_id, 'username', ${p}.username, 'reason', ${p}.reason,
  'detailed_reason', ${p}.detailed_reason, 'duration', ${p}.duration, 'expires_at', iso_utc(${p}.expires_at),
  'status', ${p}.status, 'evidence', ${p}.evidence, 'notes', ${p}.notes, 'report_id', ${p}.report_id,
  'issued_by', ${p}.issued_by, 'issued_by_name', ${p}.issued_by_name, 'revoked_at', iso_utc(${p}.revoked_at),
  'revoked_by', ${p}.revoked_by, 'revoke_reason', ${p}.revoke_reason, 'expired_at', iso_utc(${p}.expired_at),
  'created_at', iso_utc(${p}.created_at), 'updated_at', iso_utc(${p}.updated_at))`;

/**
 * What those who may not see the report a punishment cites learn of it (report-access.ts): that it
 * exists and where it stands, nothing of the report (not even its id) nor of the person punished.
 */
export interface RestrictedPunishment {
  punishment_id: string;
  report_id: null;
  status: PunishmentStatus;
  created_at: string;
  updated_at: string;
  restricted: true;
}

export const restrictedPunishment = (p: Pick<PunishmentRow, 'punishment_id' | 'report_id' | 'status' | 'created_at' | 'updated_at'>): RestrictedPunishment => ({
  punishment_id: p.punishment_id,
  report_id: null,
  status: p.status,
  created_at: p.created_at,
  updated_at: p.updated_at,
  restricted: true,
});

type PunishmentRead = Punishment & { report_flagged: boolean };

/** The punishment as this caller may see it: whole, or the placeholder when it cites a report they may not see. */
function shownPunishment(principal: Principal | null, row: PunishmentRead): Punishment | RestrictedPunishment {
  const { report_flagged, ...punishment } = row;
  return maySeeReport(principal, { is_supervisor: report_flagged }) ? punishment : restrictedPunishment(punishment);
}

// The cited report's current flag decides what the caller sees of the punishment; the stored
// profile of a party of a flagged report is withheld from those who may not see that report.
const punishmentSelect = (principal: Principal | null) => `
  select ${punishmentColumns('p')}, ${punishmentFlaggedSql('p')} as report_flagged,
    (select jsonb_build_object('item_id', d.item_id, 'kind', d.kind, 'status', d.status, 'attempts', d.attempts,
        'result_note', d.result_note, 'last_error', d.last_error, 'ref', d.ref, 'available_at', iso_utc(d.available_at),
        'completed_at', iso_utc(d.completed_at), 'updated_at', iso_utc(d.updated_at))
     from discipline_deliveries d where d.punishment_id = p.punishment_id order by d.item_id desc limit 1) as delivery,
    (select jsonb_build_object('chat_id', c.chat_id, 'username', c.username, 'global_name', c.global_name,
        'avatar', c.avatar, 'updated_at', iso_utc(c.updated_at))
     from chat_profiles c where c.chat_id = p.user_id and ${profileVisibleToSql(principal, 'c.chat_id')}) as profile
  from punishments p`;

export async function loadPunishment(db: Queryable, principal: Principal | null, punishmentId: string): Promise<Punishment | RestrictedPunishment | undefined> {
  const { rows } = await db.query<PunishmentRead>(`${punishmentSelect(principal)} where p.punishment_id = $1::text`, [punishmentId]);
  return rows[0] && shownPunishment(principal, rows[0]);
}

export interface PunishmentFilter {
  user_id?: string;
  status?: PunishmentStatus;
  limit: number;
  offset: number;
}

/**
 * The condition of a punishment list and of its count ($1 the user id, $2 the status). A placeholder
 * shows no user id, so a filter on one never matches it: the answer, or its count, would otherwise
 * say that person was punished in a flagged case.
 */
export function punishmentFilterSql(principal: Principal | null, filter: Pick<PunishmentFilter, 'user_id'>): string {
  const hidden = filterKeepsToUnflagged(principal, filter.user_id) ? ` and not ${punishmentFlaggedSql('p')}` : '';
  return `($1::text is null or p.user_id = $1::text)${hidden} and ($2::text is null or p.status = $2::text)`;
}

/** Newest first; filters are optional. */
export async function listPunishments(db: Queryable, principal: Principal | null, filter: PunishmentFilter): Promise<(Punishment | RestrictedPunishment)[]> {
  const { rows } = await db.query<PunishmentRead>(
    `${punishmentSelect(principal)}
     where ${punishmentFilterSql(principal, filter)}
     order by p.created_at desc, p.creation_order desc limit $3::int offset $4::int`,
    [filter.user_id ?? null, filter.status ?? null, filter.limit, filter.offset],
  );
  return rows.map((row) => shownPunishment(principal, row));
}

export async function lockPunishment(tx: Tx, punishmentId: string): Promise<PunishmentRow | undefined> {
  const { rows } = await tx.query<PunishmentRow>(`select ${punishmentColumns()} from punishments where punishment_id = $1::text for update`, [punishmentId]);
  return rows[0];
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const letter = () => LETTERS[randomInt(LETTERS.length)]!;
const digit = () => String(randomInt(10));

/** AA0AA0: two letters, a digit, two letters, a digit (about 45.7 million identifiers). */
export function generatePunishmentId(): string {
  return `${letter()}${letter()}${digit()}${letter()}${letter()}${digit()}`;
}
export const PUNISHMENT_ID = /^[A-Z]{2}[0-9][A-Z]{2}[0-9]$/;

export interface NewPunishment {
  user_id: string;
  reason: string;
  username?: string | null;
  detailed_reason?: string | null;
  duration?: string | null;
  expires_at?: string | null;
  status?: PunishmentStatus;
  evidence?: string | null;
  notes?: string | null;
  report_id?: string | null;
  issued_by: string | null;
  issued_by_name: string | null;
}

const ID_ATTEMPTS = 8;

/**
 * Inserts under a freshly generated id. A collision (another row, or a concurrent creation, took
 * the id) inserts nothing and the next id is tried, without aborting the caller's transaction.
 */
export async function insertPunishment(tx: Tx, input: NewPunishment): Promise<PunishmentRow> {
  for (let attempt = 0; attempt < ID_ATTEMPTS; attempt++) {
    const { rows } = await tx.query<PunishmentRow>(
      `insert into punishments (punishment_id, user_id, username, reason, detailed_reason, duration, expires_at, status,
                                evidence, notes, report_id, issued_by, issued_by_name)
       values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::timestamptz, $8::text, $9::text, $10::text,
               $11::text, $12::text, $13::text)
       on conflict (punishment_id) do nothing returning ${punishmentColumns()}`,
      [
        generatePunishmentId(),
        input.user_id,
        input.username ?? null,
        input.reason,
        input.detailed_reason ?? null,
        input.duration ?? null,
        input.expires_at ?? null,
        input.status ?? 'Active',
        input.evidence ?? null,
        input.notes ?? null,
        input.report_id ?? null,
        input.issued_by,
        input.issued_by_name,
      ],
    );
    if (rows[0]) return rows[0];
  }
  throw new Error(`No free punishment id after ${ID_ATTEMPTS} attempts`);
}

/** A length of time: an amount (a sign allowed, so that a negative one is recognised and refused) and a unit. */
const TIMED_DURATION = /^\s*([-+]?\d{1,6})\s*(m|h|d|w)\s*$/i;

/** A duration such as `0m` or `-2d` would set an expiry that has already passed. */
export function isEmptyDuration(duration: string | null | undefined): boolean {
  const match = duration == null ? null : TIMED_DURATION.exec(duration);
  return match !== null && Number(match[1]) <= 0;
}

/**
 * A duration such as `30m`, `12h`, `7d` or `2w` as an expiry from now; undefined for anything else
 * (`permanent`, free text), which is kept as a label only.
 */
export function expiryFromDuration(duration: string, now = new Date()): string | undefined {
  const match = TIMED_DURATION.exec(duration);
  if (!match) return undefined;
  const unitMs = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[match[2]!.toLowerCase() as 'm' | 'h' | 'd' | 'w'];
  return new Date(now.getTime() + Number(match[1]) * unitMs).toISOString();
}

/** Rows expired by one sweep at most; the next sweep carries on. */
const EXPIRY_BATCH = 500;

/**
 * Expires the punishments `due` selects ($2 and on its parameters): the status, a
 * `punishment.expired` event and the `expire` delivery, in one statement ($1 the correlation id).
 */
const expireSql = (due: string) =>
  `with due as (
     select punishment_id, status as status_before from punishments
     where status in ('Active', 'Appealed') and expires_at <= now() ${due}
     for update
   ), expired as (
     update punishments p set status = 'Expired', expired_at = now(), updated_at = now()
     from due where p.punishment_id = due.punishment_id and p.status in ('Active', 'Appealed')
     returning p.*, due.status_before
   ), delivered as (
     insert into discipline_deliveries (kind, punishment_id, user_id)
     select 'expire', punishment_id, user_id from expired
     on conflict (punishment_id, kind) where punishment_id is not null do nothing
     returning item_id, punishment_id
   ), logged as (
     insert into events (type, actor_kind, report_id, before, after, data, correlation_id, is_supervisor)
     select 'punishment.expired', 'system', ${punishmentReportIdSql('e')},
            jsonb_build_object('status', e.status_before),
            jsonb_build_object('status', e.status, 'expired_at', iso_utc(e.expired_at)),
            jsonb_build_object('punishment_id', e.punishment_id, 'user_id', e.user_id, 'expires_at', iso_utc(e.expires_at),
                               'delivery_item_id', d.item_id),
            $1::text, ${punishmentFlaggedSql('e')}
     from expired e left join delivered d on d.punishment_id = e.punishment_id
   )
   select punishment_id from expired order by punishment_id`;

/**
 * Expires every punishment in force whose expires_at has passed, in one statement. Any
 * number of instances may run this at once and each punishment expires exactly once: rows are
 * locked in one order (no deadlock), a row another sweep holds is waited for and then re-checked
 * (PostgreSQL re-evaluates the condition on the committed version, so it drops out), and the
 * delivery is unique per punishment and kind. Waiting rather than skipping is what lets a reader
 * that sweeps first never see a punishment in force past its expiry. Returns the expired ids.
 */
export async function expireDuePunishments(db: Queryable, correlationId: string): Promise<string[]> {
  const { rows } = await db.query<{ punishment_id: string }>(
    expireSql(`order by expires_at, punishment_id limit ${EXPIRY_BATCH}`),
    [correlationId],
    { name: 'expire_punishments' },
  );
  return rows.map((r) => r.punishment_id);
}

/** The sweep's expiry of one punishment, inside a write that holds its row: it answers what a GET, sweeping first, would show. */
export async function expirePunishmentIfDue(tx: Tx, punishmentId: string, correlationId: string): Promise<void> {
  await tx.query(expireSql('and punishment_id = $2::text'), [correlationId, punishmentId], { name: 'expire_punishment' });
}
