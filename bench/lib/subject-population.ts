// A population of people for the subject export and erasure benchmark (issue 32), planted among the
// generated reports and events (bench/lib/generate-data.ts) in set-based statements shaped like the
// service's own writes: person i (1 to `count`) has a chat id of its own (19 digits, spread like a
// platform's snowflakes, starting with 1: never a pseudonym), filed one to three reports and is
// reported in one or two, with staff notes and a timeline entry on each, evidence they submitted,
// a contact thread with a message each way, a chat profile, a punishment no longer in force (revoked
// or expired) with its deliveries and a user lookup, events about all of it (the reports' creation
// naming them, a note, a message, the punishment issued and lifted) and an admin audit row (a
// report corrected, naming their handle). Written into a kept database before its events are sealed
// (bench/lib/kept-database.ts `extend`), so that an erasure finds sealed rows, as in production.
import type { Queryable } from '../../src/platform/db/types.js';

/** The planted people's handles: `priv_<i>` (their chat profile's username, found again by this prefix). */
export const HANDLE_PREFIX = 'priv_';

/** Person i's chat id, in SQL. */
const subject = (i: string) => `(1000000000000000000 + ${i}::bigint * 4398046511104 + (${i}::bigint * 824633) % 1000000000)::text`;
/** Staff: the generated data's agents (200000000000000000 + 0..49), with their names. */
const staff = (i: string) => `(200000000000000000 + ${i} % 50)::text`;
const STAFF_NAME = `'Bench Staff'`;

/** Every planted report: F<k> filed by person i, R<k> against them; $1 is the population's size. */
const PLANTED = `(select i, r.role, k, 'PRIV-' || lpad(i::text, 6, '0') || '-' || r.role || k as report_id, ${subject('i')} as subject,
         'Privsubject ' || i as name, '${HANDLE_PREFIX}' || i as handle
    from generate_series(1, $1::int) i cross join (values ('F'), ('R')) r (role) cross join generate_series(1, 3) k
   where k <= case when r.role = 'F' then 1 + i % 3 else 1 + i % 2 end) p`;

/** Each person once; $1 is the population's size. */
const PEOPLE = `(select i, ${subject('i')} as subject, 'Privsubject ' || i as name, '${HANDLE_PREFIX}' || i as handle,
         'Q' || chr(65 + (i / 67600) % 26) || ((i / 6760) % 10)::text || chr(65 + (i / 260) % 26) || chr(65 + (i / 10) % 26) || (i % 10)::text as punishment_id,
         'PRIV-' || lpad(i::text, 6, '0') as prefix
    from generate_series(1, $1::int) i) p`;

const STATEMENTS = [
  `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, status, evidence_url, assigned_agent, created_at, updated_at)
   select p.report_id,
          case when p.role = 'F' then p.subject else (300000000000000000 + (p.i * 7919 + p.k) % 900000000)::text end,
          case when p.role = 'R' then p.subject else (400000000000000000 + (p.i * 104729 + p.k) % 900000000)::text end,
          case when p.role = 'F' then p.name || ' says they were harassed in voice chat (' || p.report_id || ')' else 'Spamming global chat' end,
          case when p.role = 'F' then 'Written by ' || p.name || ': it happened twice' else '' end,
          case when p.role = 'F' then 'Clip recorded by ' || p.name else 'Chat log' end,
          case when p.role = 'F' then p.name else 'Someone else' end,
          case when p.role = 'R' then p.handle else 'player' || p.k end,
          case when p.role = 'R' and p.k = 1 then 'Validated' else (array['Open', 'Under Investigation', 'Pending', 'Invalidated'])[1 + (p.i + p.k) % 4] end,
          case when p.role = 'F' then 'https://img.example/' || p.report_id || '.png' end,
          ${staff('p.i')}, now() - make_interval(days => p.i % 365, secs => p.k * 3600), now() - make_interval(days => p.i % 365)
     from ${PLANTED}`,
  `insert into report_notes (report_id, note, author_kind, author_chat_id, author_name, created_at)
   select p.report_id, 'Spoke with ' || p.subject || ' (' || p.handle || ') about it', 'agent', ${staff('p.i')}, ${STAFF_NAME},
          now() - make_interval(days => p.i % 365)
     from ${PLANTED}`,
  `insert into report_evidence (report_id, description, url, submitted_by, created_at)
   select p.report_id, 'Screenshot from ' || p.name, 'https://img.example/' || p.report_id || '-2.png', p.subject, now() - make_interval(days => p.i % 365)
     from ${PLANTED} where p.role = 'F'`,
  `insert into report_timeline (report_id, event, actor_kind, actor_chat_id, actor_name, created_at)
   select p.report_id, 'Note added about ' || p.handle, 'agent', ${staff('p.i')}, ${STAFF_NAME}, now() - make_interval(days => p.i % 365)
     from ${PLANTED}`,
  `insert into contact_threads (report_id, created_at)
   select p.report_id, now() - make_interval(days => p.i % 365) from ${PLANTED} where p.role = 'F' and p.k = 1`,
  `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name, created_at)
   select p.report_id, m.direction,
          case when m.direction = 'to_reporter' then 'Could you send a screenshot?' else 'Here it is, ' || p.name || ' speaking' end,
          case when m.direction = 'to_reporter' then ${staff('p.i')} end,
          case when m.direction = 'to_reporter' then ${STAFF_NAME} else p.name end, now() - make_interval(days => p.i % 365)
     from ${PLANTED} cross join (values ('to_reporter'), ('from_reporter')) m (direction) where p.role = 'F' and p.k = 1`,
  `insert into chat_profiles (chat_id, username, global_name, avatar, profile, updated_at)
   select p.subject, p.handle, p.name, md5(p.handle), jsonb_build_object('id', p.subject, 'username', p.handle, 'global_name', p.name), now() - make_interval(days => p.i % 30)
     from ${PEOPLE}`,
  // Lifted: revoked for odd i, expired for even i; neither refuses the erasure.
  `insert into punishments (punishment_id, user_id, username, reason, duration, expires_at, status, report_id, issued_by, issued_by_name,
                            revoked_at, revoked_by, revoke_reason, expired_at, created_at)
   select p.punishment_id, p.subject, p.handle, 'Spamming global chat, reported against ' || p.subject, '7d',
          now() - make_interval(days => p.i % 365) + interval '7 days', case when p.i % 2 = 1 then 'Revoked' else 'Expired' end,
          p.prefix || '-R1', ${staff('p.i')}, ${STAFF_NAME},
          case when p.i % 2 = 1 then now() - make_interval(days => p.i % 365) + interval '1 day' end,
          case when p.i % 2 = 1 then ${staff('p.i')} end, case when p.i % 2 = 1 then 'Appeal upheld' end,
          case when p.i % 2 = 0 then now() - make_interval(days => p.i % 365) + interval '7 days' end,
          now() - make_interval(days => p.i % 365)
     from ${PEOPLE}`,
  `insert into discipline_deliveries (kind, punishment_id, user_id, status, requested_by, completed_at, created_at)
   select d.kind, case when d.kind <> 'user_lookup' then p.punishment_id end, p.subject, 'success', ${staff('p.i')},
          now() - make_interval(days => p.i % 365), now() - make_interval(days => p.i % 365)
     from ${PEOPLE} cross join (values ('issue'), ('revoke'), ('expire'), ('user_lookup')) d (kind)
    where d.kind in ('issue', 'user_lookup') or (d.kind = 'revoke') = (p.i % 2 = 1)`,
  `insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, after, correlation_id, created_at)
   select 'report.created', 'bot', null, null, p.report_id,
          jsonb_build_object('report_id', r.report_id, 'reporter', r.reporter, 'reported', r.reported, 'reporter_name', r.reporter_name,
                             'reported_name', r.reported_name, 'reason', r.reason, 'notes', r.notes, 'evidence', r.evidence),
          'priv-' || p.report_id, r.created_at
     from ${PLANTED} join reports r on r.report_id = p.report_id`,
  `insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, after, data, correlation_id, created_at)
   select e.type, 'agent', ${staff('p.i')}, ${STAFF_NAME}, e.report_id, e.after, e.data, 'priv-' || p.prefix || '-' || e.type, now() - make_interval(days => p.i % 365)
     from ${PEOPLE} cross join lateral (values
       ('report.note_added', p.prefix || '-R1', jsonb_build_object('note', 'Spoke with ' || p.subject || ' (' || p.handle || ') about it'), null::jsonb),
       ('contact.message_added', p.prefix || '-F1', null, jsonb_build_object('direction', 'from_reporter', 'body', 'Here it is, ' || p.name || ' speaking')),
       ('punishment.issued', null, jsonb_build_object('punishment_id', p.punishment_id, 'user_id', p.subject, 'username', p.handle, 'reason', 'Spamming global chat'), null),
       ('punishment.' || case when p.i % 2 = 1 then 'revoked' else 'expired' end, null,
        jsonb_build_object('punishment_id', p.punishment_id, 'user_id', p.subject, 'status', case when p.i % 2 = 1 then 'Revoked' else 'Expired' end), null)
     ) e (type, report_id, after, data)`,
  `insert into audit_log (actor_kind, actor_chat_id, action, target, reason, before, after, correlation_id, created_at)
   select 'agent', ${staff('p.i')}, 'admin.report_corrected', p.prefix || '-R1', 'Typo in ' || p.handle || '''s name',
          jsonb_build_object('reported_name', 'priv' || p.i), jsonb_build_object('reported_name', p.handle), 'priv-' || p.prefix || '-audit', now() - make_interval(days => p.i % 365)
     from ${PEOPLE}`,
];

/** Plants `count` people (a kept database's `extend`: run once, before its indexes and seals). */
export async function plantPopulation(db: Queryable, count: number): Promise<void> {
  for (const sql of STATEMENTS) await db.query(sql, [count]);
}

/** The planted people whom no erasure has reached yet (an erasure deletes their chat profile), in chat id order. */
export async function unerasedSubjects(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ chat_id: string }>(
    `select chat_id from chat_profiles where username like '${HANDLE_PREFIX}%' order by chat_id`,
  );
  return rows.map((r) => r.chat_id);
}
