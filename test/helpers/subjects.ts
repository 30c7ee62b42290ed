// A person planted in every place of the personal-data catalogue (src/admin/subjects/catalogue.ts),
// and rows of staff naming them, for the subject export and erasure tests. Each planted row is
// remembered under the export kind it must appear in; `secrets` are what must be gone after an
// erasure (their chat id, names and the words they wrote).
import { recordAudit } from '../../src/platform/audit.js';
import type { Db, Tx } from '../../src/platform/db/types.js';
import { recordEvent } from '../../src/platform/events.js';

export interface Planted {
  chatId: string;
  /** Export kind -> the ids planted there. */
  expected: Record<string, string[]>;
  secrets: string[];
  /** Rows of another person, which an export or erasure of this one must leave alone. */
  bystander: { reportId: string; eventId: string; noteId: string };
}

let n = 0;

async function id(tx: Tx, sql: string, values: unknown[]): Promise<string> {
  const { rows } = await tx.query<{ id: string | number }>(sql, values);
  return String(rows[0]!.id);
}

/** `tag` makes every planted value unique to the call; `staff` is an agent whose actions name them. */
export async function plantSubject(db: Db, subject: string, staff: { chat_id: string; name: string | null }, other: string): Promise<Planted> {
  const tag = `${process.pid}x${++n}`;
  const name = `Quinn Vantablack ${tag}`;
  const handle = `quinn_${tag}`;
  const words = { reason: `Zorblax harassed me ${tag}`, notes: `Zorblax notes ${tag}`, evidence: `Zorblax evidence ${tag}`, message: `Zorblax message ${tag}`, described: `Zorblax screenshot ${tag}` };
  const url = `https://img.example/${tag}.png`;
  const filed = `SUBJ-${tag}-A`;
  const against = `SUBJ-${tag}-B`;
  const gone = `SUBJ-${tag}-C`;
  const theirs = `SUBJ-${tag}-D`;
  const e: Record<string, string[]> = {};
  const add = (kind: string, value: string) => (e[kind] ??= []).push(value);
  const actor = { kind: 'agent' as const, chatId: staff.chat_id, name: staff.name };

  const bystander = await db.transaction(async (tx) => {
    const insertReport = (reportId: string, reporter: string, reported: string, reporterName: string | null, reportedName: string | null, reason: string) =>
      tx.query(
        `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, evidence_url, assigned_agent)
         values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text)`,
        [reportId, reporter, reported, reason, reporter === subject ? words.notes : 'staff notes', reporter === subject ? words.evidence : 'e',
          reporterName, reportedName, reporter === subject ? url : null, staff.chat_id],
      );
    await insertReport(filed, subject, other, name, 'Other Person', words.reason);
    await insertReport(against, other, subject, 'Other Person', handle, 'They spammed');
    await insertReport(gone, subject, other, name, 'Other Person', `${words.reason} again`);
    await insertReport(theirs, other, staff.chat_id, 'Other Person', staff.name, 'Not about the subject');
    add('reports_as_reporter', filed);
    add('reports_as_reporter', gone);
    add('reports_as_reported', against);

    add('notes', await id(tx, `insert into report_notes (report_id, note, author_kind, author_chat_id, author_name) values ($1::text, $2::text, 'agent', $3::text, $4::text) returning id`,
      [against, `Spoke with ${subject} (${handle}); they said "${words.message}"`, staff.chat_id, staff.name]));
    add('notes', await id(tx, `insert into report_notes (report_id, note, author_kind, author_chat_id, author_name) values ($1::text, 'Bot note', 'bot', null, 'Automation bot') returning id`, [filed]));
    const bystanderNote = await id(tx, `insert into report_notes (report_id, note, author_kind, author_chat_id, author_name) values ($1::text, 'Unrelated', 'agent', $2::text, $3::text) returning id`,
      [theirs, staff.chat_id, staff.name]);
    add('evidence', await id(tx, `insert into report_evidence (report_id, description, url, submitted_by) values ($1::text, $2::text, $3::text, $4::text) returning id`,
      [filed, words.described, url, subject]));
    add('timeline', await id(tx, `insert into report_timeline (report_id, event, actor_kind, actor_chat_id, actor_name) values ($1::text, $2::text, 'agent', $3::text, $4::text) returning id`,
      [filed, `Evidence added: ${words.described}`, staff.chat_id, staff.name]));
    await tx.query(`insert into contact_threads (report_id) values ($1::text)`, [filed]);
    add('contact_threads', filed);
    add('contact_messages', await id(tx, `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name) values ($1::text, 'to_reporter', 'Could you send a screenshot?', $2::text, $3::text) returning id`,
      [filed, staff.chat_id, staff.name]));
    add('contact_messages', await id(tx, `insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name) values ($1::text, 'from_reporter', $2::text, null, $3::text) returning id`,
      [filed, words.message, name]));
    add('report_actions', await id(tx, `insert into report_actions (report_id, kind, queue, payload, requested_by) values ($1::text, 'contact_reporter', 'operator', $2::jsonb, $3::text) returning action_id as id`,
      [filed, JSON.stringify({ reason: 'Please send proof', body: 'Please send proof', reporter: subject, thread_id: null }), staff.chat_id]));
    await tx.query(`insert into chat_profiles (chat_id, username, global_name, avatar, profile) values ($1::text, $2::text, $3::text, 'a1b2c3', $4::jsonb)`,
      [subject, handle, name, JSON.stringify({ id: subject, username: handle, global_name: name, bio: words.message })]);
    add('chat_profiles', subject);
    await tx.query(
      `insert into punishments (punishment_id, user_id, username, reason, status, report_id, issued_by, issued_by_name, revoked_at, revoked_by, revoke_reason)
       values ($1::text, $2::text, $3::text, $4::text, 'Revoked', $5::text, $6::text, $7::text, now(), $6::text, 'Appeal upheld')`,
      [punishmentId(tag), subject, handle, `Spam reported by others against ${subject}`, against, staff.chat_id, staff.name],
    );
    add('punishments', punishmentId(tag));
    add('deliveries', await id(tx, `insert into discipline_deliveries (kind, punishment_id, user_id, requested_by) values ('issue', $1::text, $2::text, $3::text) returning item_id as id`,
      [punishmentId(tag), subject, staff.chat_id]));
    add('deliveries', await id(tx, `insert into discipline_deliveries (kind, user_id, requested_by, status) values ('user_lookup', $1::text, $2::text, 'success') returning item_id as id`, [subject, staff.chat_id]));

    // A report deleted: its pre-image (with its timeline and messages) is the forensic record.
    const preImage = {
      report_id: gone, reporter: subject, reported: other, reporter_name: name, reported_name: 'Other Person', reason: `${words.reason} again`, notes: words.notes,
      evidence: words.evidence, evidence_url: url, status: 'Open', notes_list: [{ note: `Called ${name}`, author_chat_id: staff.chat_id, author_name: staff.name }],
      messages: [{ direction: 'from_reporter', body: words.message, sender_chat_id: null, sender_name: name }],
      chat_profiles: [{ chat_id: subject, username: handle, global_name: name }],
    };
    const deleted = await id(tx, `insert into deleted_reports (report_id, pre_image, reason, deleted_by_kind, deleted_by_chat_id, correlation_id) values ($1::text, $2::jsonb, 'Duplicate', 'agent', $3::text, $4::text) returning id`,
      [gone, JSON.stringify(preImage), staff.chat_id, `c-${tag}`]);
    await tx.query('delete from reports where report_id = $1::text', [gone]);
    add('deleted_reports', deleted);
    e.reports_as_reporter = e.reports_as_reporter!.filter((r) => r !== gone);

    // Events and admin audit rows, as the writers shape them.
    const event = async (type: Parameters<typeof recordEvent>[1]['type'], reportId: string | null, fields: { before?: unknown; after?: unknown; data?: unknown }) => {
      await recordEvent(tx, { type, actor, correlationId: `c-${tag}`, reportId, ...fields });
      return id(tx, 'select max(id) as id from events', []);
    };
    add('events', await event('report.created', filed, { after: { report_id: filed, reporter: subject, reported: other, reporter_name: name, reason: words.reason, notes: words.notes, evidence: words.evidence } }));
    add('events', await event('contact.message_added', filed, { data: { message_id: 2, direction: 'from_reporter' } }));
    add('events', await event('report.deleted', gone, { before: preImage, data: { reason: 'Duplicate' } }));
    add('events', await event('punishment.issued', null, { after: { punishment_id: punishmentId(tag), user_id: subject, username: handle, reason: 'Spam' } }));
    const bystanderEvent = await event('report.created', theirs, { after: { report_id: theirs, reporter: other, reported: staff.chat_id, reason: 'Not about the subject' } });
    await recordAudit(tx, { actor, action: 'admin.report_corrected', target: against, reason: `Typo in ${handle}'s name`, before: { reported_name: 'quinn' }, after: { reported_name: handle }, correlationId: `c-${tag}` });
    add('audit_log', await id(tx, 'select max(id) as id from audit_log', []));
    return { reportId: theirs, eventId: bystanderEvent, noteId: bystanderNote };
  });
  // contact.message_added names no one by value: it is not theirs, however close to their report.
  e.events = e.events!.filter((_, i) => i !== 1);
  return { chatId: subject, expected: e, secrets: [subject, name, handle, ...Object.values(words), url], bystander };
}

/** A punishment id of the required shape, unique to the tag. */
function punishmentId(tag: string): string {
  const digits = tag.replace(/\D/g, '');
  const letter = (i: number) => String.fromCharCode(65 + (Number(digits.slice(i, i + 2) || '0') % 26));
  return `${letter(0)}${letter(2)}${digits.at(-1) ?? '0'}${letter(4)}${letter(6)}${digits.at(-2) ?? '0'}`;
}
