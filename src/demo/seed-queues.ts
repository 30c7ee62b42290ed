// Demo punishments in every status and both bot queues in every state, tied to the demo reports
// (seed-reports.ts runs first), so the dashboard's queue and punishment views have something in
// every column and the bot has work to pick up in demo.
import type { Tx } from '../platform/db/types.js';
import type { SeedCounts } from './seed-counts.js';

const SUPERVISOR = '100000000000000002';
const AGENT = '100000000000000003';
const HEAD = '318640275119384062';
const SENIOR = '611047382295518804';

/** [report, kind, queue, status, attempts, last_error, minutes ago]. */
const ACTIONS: readonly [string, string, string, string, number, string | null, number][] = [
  ['SVC-CASE-48150', 'investigate', 'operator', 'pending', 0, null, 30],
  ['SVC-CASE-48150', 'contact_reporter', 'operator', 'success', 1, null, 2880],
  ['SVC-CASE-47877', 'investigate', 'supervisor', 'processing', 1, null, 3],
  ['SVC-CASE-47930', 'validate', 'operator', 'success', 1, null, 20160],
  ['SVC-CASE-47930', 'contact_closed', 'operator', 'success', 1, null, 18720],
  ['SVC-CASE-47902', 'invalidate', 'operator', 'failed', 3, 'Unknown channel: the reporter left the server', 23040],
  ['SVC-CASE-48197', 'claim', 'operator', 'cancelled', 0, 'Cancelled by an administrator: posted twice', 1440],
];

interface DemoPunishment {
  id: string;
  user: [string, string];
  reason: string;
  duration: string | null;
  /** Hours from now; negative: already passed. */
  expiresIn: number | null;
  status: 'Active' | 'Appealed' | 'Expired' | 'Revoked';
  report: string | null;
  issuedBy: string;
  hoursAgo: number;
  revoke?: [string, string];
}

const PUNISHMENTS: readonly DemoPunishment[] = [
  { id: 'GV7CL3', user: ['620018834472570880', 'ghost.vr'], reason: 'Combat logging during a pursuit', duration: '3d', expiresIn: 48, status: 'Active', report: 'SVC-CASE-47930', issuedBy: SENIOR, hoursAgo: 24 },
  { id: 'RK2TS8', user: ['581470963318521856', 'R3kt'], reason: 'Slurs in the global chat', duration: 'permanent', expiresIn: null, status: 'Active', report: 'SVC-CASE-48076', issuedBy: SUPERVISOR, hoursAgo: 1 },
  { id: 'LS5IM4', user: ['744388125901725696', 'LuckyStrike'], reason: 'Impersonating a staff member', duration: '14d', expiresIn: 240, status: 'Appealed', report: 'SVC-CASE-47991', issuedBy: HEAD, hoursAgo: 96 },
  { id: 'BZ3TE6', user: ['596630174428102656', 'Blitz'], reason: 'Teaming with criminals while on duty', duration: '7d', expiresIn: 96, status: 'Revoked', report: 'SVC-CASE-47902', issuedBy: AGENT, hoursAgo: 72, revoke: [HEAD, 'Report invalidated: the player was on an undercover shift'] },
  { id: 'DK8RM2', user: ['733019458821664768', 'Drift_King'], reason: 'Fail roleplay: ramming police vehicles', duration: '1d', expiresIn: -48, status: 'Expired', report: 'SVC-CASE-48150', issuedBy: AGENT, hoursAgo: 72 },
  { id: 'NO1WL5', user: ['612203785533947904', 'NightOwl_88'], reason: 'Spawn killing new players', duration: '12h', expiresIn: 11, status: 'Active', report: 'SVC-CASE-48197', issuedBy: AGENT, hoursAgo: 1 },
  { id: 'KS6TR9', user: ['655901247739166720', 'Kestrel'], reason: 'Leaking report details', duration: '30d', expiresIn: 700, status: 'Active', report: 'SVC-CASE-47840', issuedBy: SUPERVISOR, hoursAgo: 20 },
  { id: 'TX9QA7', user: ['887766554433221100', 'unknown'], reason: 'Scam links in direct messages', duration: '7d', expiresIn: 168, status: 'Active', report: null, issuedBy: SUPERVISOR, hoursAgo: 0 },
];

/** [punishment, kind, status, attempts, last_error or note, ref, minutes ago, paced retry in minutes]. */
const DELIVERIES: readonly [string, string, string, number, string | null, string | null, number, number | null][] = [
  ['GV7CL3', 'issue', 'success', 1, 'Role applied and user notified', 'dm-1309884120557', 1439, null],
  ['RK2TS8', 'issue', 'processing', 1, null, null, 2, null],
  ['LS5IM4', 'issue', 'success', 1, 'Role applied and user notified', 'dm-1309511873301', 5759, null],
  ['BZ3TE6', 'issue', 'success', 1, 'Role applied and user notified', 'dm-1309201184456', 4319, null],
  ['BZ3TE6', 'revoke', 'failed', 3, 'Missing Permissions: the bot role is below the punishment role', null, 1400, null],
  ['DK8RM2', 'issue', 'success', 1, 'Role applied and user notified', 'dm-1308870012954', 4319, null],
  ['DK8RM2', 'expire', 'success', 1, 'Role removed', 'dm-1309095571268', 2879, null],
  ['NO1WL5', 'issue', 'pending', 1, 'Rate limited (429): retry after 120 s', null, 58, 2],
  ['KS6TR9', 'issue', 'cancelled', 0, 'Cancelled by an administrator: issued on the wrong account first', null, 1190, null],
  ['TX9QA7', 'issue', 'pending', 0, null, null, 0, null],
];

export async function seedQueues(tx: Tx): Promise<SeedCounts> {
  // Seeding again restores them: the seeded punishments go (their deliveries cascade) and the
  // report actions went with their reports in seedReports.
  await tx.query('delete from punishments where punishment_id = any($1::text[])', [PUNISHMENTS.map((p) => p.id)]);
  await tx.query(`delete from discipline_deliveries where kind = 'user_lookup' and user_id = '887766554433221100'`);
  const actions = await tx.query(
    `insert into report_actions (report_id, kind, queue, status, attempts, last_error, result_note, payload, claimed_at, completed_at,
                                 created_at, updated_at)
     select report_id, kind, queue, status, attempts, last_error, case when status = 'success' then 'Done' end,
            jsonb_build_object('reason', 'Demo'), case when status = 'processing' then now() - make_interval(mins => ago) end,
            case when status in ('success', 'failed', 'cancelled') then now() - make_interval(mins => ago) + interval '1 minute' end,
            now() - make_interval(mins => ago), now() - make_interval(mins => ago)
     from jsonb_to_recordset($1::jsonb) as x(report_id text, kind text, queue text, status text, attempts int, last_error text, ago int)`,
    [JSON.stringify(ACTIONS.map(([report_id, kind, queue, status, attempts, last_error, ago]) => ({ report_id, kind, queue, status, attempts, last_error, ago })))],
  );
  const punishments = await tx.query(
    `insert into punishments (punishment_id, user_id, username, reason, duration, expires_at, status, report_id, issued_by, issued_by_name,
                              revoked_at, revoked_by, revoke_reason, expired_at, created_at, updated_at)
     select x.id, x.user_id, x.username, x.reason, x.duration, now() + make_interval(hours => x.expires_in), x.status, x.report_id,
            x.issued_by, a.name, case when x.status = 'Revoked' then now() - interval '23 hours' end, x.revoked_by, x.revoke_reason,
            case when x.status = 'Expired' then now() + make_interval(hours => x.expires_in) end,
            now() - make_interval(hours => x.hours_ago), now() - make_interval(hours => least(x.hours_ago, 23))
     from jsonb_to_recordset($1::jsonb) as x(id text, user_id text, username text, reason text, duration text, expires_in int,
          status text, report_id text, issued_by text, hours_ago int, revoked_by text, revoke_reason text)
     left join agents a on a.chat_id = x.issued_by`,
    [JSON.stringify(PUNISHMENTS.map((p) => ({
      id: p.id, user_id: p.user[0], username: p.user[1], reason: p.reason, duration: p.duration, expires_in: p.expiresIn, status: p.status,
      report_id: p.report, issued_by: p.issuedBy, hours_ago: p.hoursAgo, revoked_by: p.revoke?.[0] ?? null, revoke_reason: p.revoke?.[1] ?? null,
    })))],
  );
  const deliveries = await tx.query(
    `insert into discipline_deliveries (kind, punishment_id, user_id, status, attempts, available_at, result_note, last_error, ref,
                                        requested_by, claimed_at, completed_at, created_at, updated_at)
     select x.kind, x.punishment_id, p.user_id, x.status, x.attempts,
            case when x.retry_in is null then now() - make_interval(mins => x.ago) else now() + make_interval(mins => x.retry_in) end,
            case when x.status = 'success' then x.note end, case when x.status in ('failed', 'pending', 'cancelled') then x.note end, x.ref,
            p.issued_by, case when x.status = 'processing' then now() - make_interval(mins => x.ago) end,
            case when x.status in ('success', 'failed', 'cancelled') then now() - make_interval(mins => x.ago) + interval '1 minute' end,
            now() - make_interval(mins => x.ago), now() - make_interval(mins => x.ago)
     from jsonb_to_recordset($1::jsonb) as x(punishment_id text, kind text, status text, attempts int, note text, ref text, ago int, retry_in int)
     join punishments p on p.punishment_id = x.punishment_id`,
    [JSON.stringify(DELIVERIES.map(([punishment_id, kind, status, attempts, note, ref, ago, retry_in]) => ({ punishment_id, kind, status, attempts, note, ref, ago, retry_in })))],
  );
  // The last punishment's user has no profile on record: the issue flow asked the bot to look them up.
  const lookups = await tx.query(
    `insert into discipline_deliveries (kind, user_id, requested_by) values ('user_lookup', '887766554433221100', $1::text)`,
    [SUPERVISOR],
  );
  return { report_actions: actions.rowCount, punishments: punishments.rowCount, discipline_deliveries: deliveries.rowCount + lookups.rowCount };
}
