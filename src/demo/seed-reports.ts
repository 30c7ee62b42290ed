// Demo reports in every display status, with notes, evidence, timelines, chat profile snapshots
// and contact threads (one open, one closed), assigned to the demo personas so that a visitor
// signed in as a persona has cases to act on.
import type { Tx } from '../platform/db/types.js';
import type { SeedCounts } from './seed-counts.js';

const DIRECTOR = '100000000000000001';
const SUPERVISOR = '100000000000000002';
const AGENT = '100000000000000003';
const HEAD = '318640275119384062';
const SENIOR = '611047382295518804';

interface DemoReport {
  id: string;
  reporter: [string, string];
  reported: [string, string];
  reason: string;
  status: string;
  assigned: string | null;
  supervisor?: boolean;
  daysAgo: number;
}

const REPORTS: readonly DemoReport[] = [
  { id: 'SVC-CASE-48213', reporter: ['421337905512268801', 'mapleleaf'], reported: ['508812330461199872', 'vexx_rider'], reason: 'Repeated harassment in voice chat after being asked to stop', status: 'Open', assigned: null, daysAgo: 0 },
  { id: 'SVC-CASE-48197', reporter: ['377120458876030977', 'quietstorm'], reported: ['612203785533947904', 'NightOwl_88'], reason: 'Spawn killing new players at the dealership', status: 'Open', assigned: AGENT, daysAgo: 1 },
  { id: 'SVC-CASE-48150', reporter: ['290456119820742656', 'cobalt.fox'], reported: ['733019458821664768', 'Drift_King'], reason: 'Fail roleplay: ramming police vehicles without cause', status: 'Under Investigation', assigned: AGENT, daysAgo: 3 },
  { id: 'SVC-CASE-48122', reporter: ['455601298734161920', 'ember_lane'], reported: ['688125903340617728', 'tkz'], reason: 'Exploiting a map glitch to escape arrests', status: 'Under Investigation', assigned: SENIOR, daysAgo: 4 },
  { id: 'SVC-CASE-48076', reporter: ['366092184751841281', 'harbor_light'], reported: ['581470963318521856', 'R3kt'], reason: 'Slurs in the global chat', status: 'Pending', assigned: AGENT, daysAgo: 6 },
  { id: 'SVC-CASE-47991', reporter: ['412278830056493057', 'pinecone'], reported: ['744388125901725696', 'LuckyStrike'], reason: 'Impersonating a staff member in direct messages', status: 'Appealed', assigned: HEAD, daysAgo: 11 },
  { id: 'SVC-CASE-47930', reporter: ['301845667290214401', 'saltwater'], reported: ['620018834472570880', 'ghost.vr'], reason: 'Combat logging during a pursuit', status: 'Validated', assigned: SENIOR, daysAgo: 15 },
  { id: 'SVC-CASE-47902', reporter: ['389904512673656832', 'ironbark'], reported: ['596630174428102656', 'Blitz'], reason: 'Alleged teaming with criminals while on duty', status: 'Invalidated', assigned: AGENT, daysAgo: 18 },
  { id: 'SVC-CASE-47877', reporter: ['447312096580812801', 'northwind'], reported: ['702345518899748864', 'Sable'], reason: 'Moderator abusing in-game permissions', status: 'Under Investigation', assigned: SUPERVISOR, supervisor: true, daysAgo: 20 },
  { id: 'SVC-CASE-47840', reporter: ['352289174466510849', 'riverstone'], reported: ['655901247739166720', 'Kestrel'], reason: 'Staff member leaking report details', status: 'Open', assigned: null, supervisor: true, daysAgo: 22 },
];

const NOTES: readonly [string, string, string, number][] = [
  ['SVC-CASE-48150', AGENT, 'Pulled the server log for the 21:40 pursuit; three rams in under a minute.', 2],
  ['SVC-CASE-48150', AGENT, 'Reported player claims lag; ping stayed under 80 ms throughout.', 1],
  ['SVC-CASE-48122', SENIOR, 'Reproduced the glitch on the test server: it is real and still open.', 3],
  ['SVC-CASE-47877', SUPERVISOR, 'Permission audit requested from the game server owners.', 19],
];

const EVIDENCE: readonly [string, string | null, string, string, number][] = [
  ['SVC-CASE-48213', null, 'Initial evidence', 'https://evidence.example.org/clips/48213-voice.mp4', 0],
  ['SVC-CASE-48150', AGENT, 'Dashcam clip of the third ram', 'https://evidence.example.org/clips/48150-ram3.mp4', 2],
  ['SVC-CASE-48076', null, 'Screenshot of the chat', 'https://evidence.example.org/img/48076-chat.png', 6],
  ['SVC-CASE-47930', SENIOR, 'Disconnect timestamps from the server log', 'https://evidence.example.org/logs/47930.txt', 14],
  ['SVC-CASE-47877', SUPERVISOR, 'Permission change history', 'https://evidence.example.org/logs/47877-perms.csv', 19],
];

const TIMELINE: readonly [string, string | null, string, number][] = [
  ...REPORTS.map((r): [string, string | null, string, number] => [r.id, null, 'Report created', r.daysAgo]),
  ['SVC-CASE-48197', AGENT, 'Claimed by Jordan Pike', 1],
  ['SVC-CASE-48150', AGENT, 'Investigation started: pursuit footage received', 3],
  ['SVC-CASE-48122', SENIOR, 'Investigation started: glitch reproducible', 4],
  ['SVC-CASE-48076', AGENT, 'Investigation concluded, awaiting decision', 5],
  ['SVC-CASE-47991', HEAD, 'Appeal received from the reported player', 9],
  ['SVC-CASE-47930', SENIOR, 'Validated: disconnects match the pursuit window', 14],
  ['SVC-CASE-47902', AGENT, 'Invalidated: the player was on an undercover shift', 16],
  ['SVC-CASE-47877', SUPERVISOR, 'Investigation started: supervisor case', 20],
];

const THREADS: readonly { report: string; closedBy: string | null; messages: [string, string, string | null, string, number][] }[] = [
  {
    report: 'SVC-CASE-48150',
    closedBy: null,
    messages: [
      ['to_reporter', 'Thanks for the report. Do you have the time the first ram happened?', AGENT, 'Jordan Pike', 2],
      ['from_reporter', 'Around 21:38 server time, right after the bank alarm.', null, 'cobalt.fox', 2],
    ],
  },
  {
    report: 'SVC-CASE-47930',
    closedBy: SENIOR,
    messages: [
      ['to_reporter', 'We have validated your report and action has been taken. Thank you.', SENIOR, 'Elliot Varga', 14],
      ['from_reporter', 'Appreciate it!', null, 'saltwater', 14],
    ],
  },
];

export async function seedReports(tx: Tx): Promise<SeedCounts> {
  // Seeding again restores the seeded reports: drop them with their timelines (their notes,
  // evidence, threads and queue rows cascade; a timeline outlives its report) and write them afresh.
  const ids = REPORTS.map((r) => r.id);
  await tx.query('delete from report_timeline where report_id = any($1::text[])', [ids]);
  await tx.query('delete from reports where report_id = any($1::text[])', [ids]);
  const reports = await tx.query(
    `insert into reports (report_id, reporter, reporter_name, reported, reported_name, reason, notes, evidence, status,
                          assigned_agent, is_supervisor, investigation_started_at, created_at, updated_at)
     select id, reporter, reporter_name, reported, reported_name, reason, '', 'See attached evidence', status, assigned,
            supervisor, case when status = 'Under Investigation' then now() - make_interval(days => days_ago) end,
            now() - make_interval(days => days_ago), now() - make_interval(days => days_ago)
     from jsonb_to_recordset($1::jsonb) as x(id text, reporter text, reporter_name text, reported text, reported_name text,
          reason text, status text, assigned text, supervisor boolean, days_ago int)`,
    [JSON.stringify(REPORTS.map((r) => ({
      id: r.id, reporter: r.reporter[0], reporter_name: r.reporter[1], reported: r.reported[0], reported_name: r.reported[1],
      reason: r.reason, status: r.status, assigned: r.assigned, supervisor: r.supervisor ?? false, days_ago: r.daysAgo,
    })))],
  );
  const notes = await tx.query(
    `insert into report_notes (report_id, note, author_kind, author_chat_id, author_name, created_at)
     select x.report_id, x.note, 'agent', x.author, a.name, now() - make_interval(days => x.days_ago)
     from jsonb_to_recordset($1::jsonb) as x(report_id text, author text, note text, days_ago int)
     left join agents a on a.chat_id = x.author`,
    [JSON.stringify(NOTES.map(([report_id, author, note, days_ago]) => ({ report_id, author, note, days_ago })))],
  );
  const evidence = await tx.query(
    `insert into report_evidence (report_id, submitted_by, description, url, created_at)
     select report_id, submitted_by, description, url, now() - make_interval(days => days_ago)
     from jsonb_to_recordset($1::jsonb) as x(report_id text, submitted_by text, description text, url text, days_ago int)`,
    [JSON.stringify(EVIDENCE.map(([report_id, submitted_by, description, url, days_ago]) => ({ report_id, submitted_by, description, url, days_ago })))],
  );
  const timeline = await tx.query(
    `insert into report_timeline (report_id, event, actor_kind, actor_chat_id, actor_name, created_at)
     select x.report_id, x.event, case when x.actor is null then 'bot' else 'agent' end, x.actor,
            coalesce(a.name, 'Automation bot'), now() - make_interval(days => x.days_ago)
     from jsonb_to_recordset($1::jsonb) as x(report_id text, actor text, event text, days_ago int)
     left join agents a on a.chat_id = x.actor
     order by x.days_ago desc`,
    [JSON.stringify(TIMELINE.map(([report_id, actor, event, days_ago]) => ({ report_id, actor, event, days_ago })))],
  );
  const threads = await tx.query(
    `insert into contact_threads (report_id, closed, closed_at, closed_by, closed_by_name, created_at)
     select x.report_id, x.closed_by is not null, case when x.closed_by is not null then now() - interval '13 days' end,
            x.closed_by, a.name, now() - interval '14 days'
     from jsonb_to_recordset($1::jsonb) as x(report_id text, closed_by text)
     left join agents a on a.chat_id = x.closed_by`,
    [JSON.stringify(THREADS.map((t) => ({ report_id: t.report, closed_by: t.closedBy })))],
  );
  const messages = await tx.query(
    `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name, created_at)
     select report_id, direction, body, sender, sender_name, now() - make_interval(days => days_ago, mins => ord)
     from jsonb_to_recordset($1::jsonb) as x(report_id text, direction text, body text, sender text, sender_name text, days_ago int, ord int)`,
    [JSON.stringify(THREADS.flatMap((t) => t.messages.map(([direction, body, sender, sender_name, days_ago], i) => (
      { report_id: t.report, direction, body, sender, sender_name, days_ago, ord: t.messages.length - i }))))],
  );
  const profiles = await tx.query(
    `insert into chat_profiles (chat_id, username, global_name, profile)
     select chat_id, username, username, jsonb_build_object('chat_id', chat_id, 'username', username)
     from jsonb_to_recordset($1::jsonb) as x(chat_id text, username text)
     on conflict (chat_id) do update set username = excluded.username, global_name = excluded.global_name,
       profile = excluded.profile, updated_at = now()`,
    [JSON.stringify(REPORTS.flatMap((r) => [r.reporter, r.reported]).map(([chat_id, username]) => ({ chat_id, username })))],
  );
  return {
    reports: reports.rowCount,
    report_notes: notes.rowCount,
    report_evidence: evidence.rowCount,
    report_timeline: timeline.rowCount,
    contact_threads: threads.rowCount,
    contact_messages: messages.rowCount,
    chat_profiles: profiles.rowCount,
  };
}
