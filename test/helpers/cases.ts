// Cases planted for the retention tests (issue 32, RETENTION_DAYS): a report with everything of
// its life (an earlier life of its id deleted, notes, evidence, timeline, contact thread and
// messages, a queue item, its events and an admin audit row), its people's names and words unique
// to the call, so that a test can say whether they are still anywhere in the database.
import type { Db } from '../../src/platform/db/types.js';
import { recordAudit } from '../../src/platform/audit.js';
import { recordEvent } from '../../src/platform/events.js';
import { chatId } from './identity.js';

export interface PlantedCase {
  reportId: string;
  reporter: string;
  reported: string;
  /** Their chat ids, names and words: gone from every table after the case's erasure. */
  secrets: string[];
}

let n = 0;

/** `closedDaysAgo`: the report's last change that many days ago; `status` Validated unless told. */
export async function plantCase(db: Db, staff: { chat_id: string; name: string }, options: { status?: string; closedDaysAgo: number }): Promise<PlantedCase> {
  const tag = `${process.pid}r${++n}`;
  const reportId = `RET-${tag}`;
  const [reporter, reported] = [chatId(), chatId()];
  const reporterName = `Orla Quillfeather ${tag}`;
  const reportedName = `grimsnatch_${tag}`;
  const words = { reason: `Blorptang spammed links ${tag}`, notes: `Blorptang notes ${tag}`, message: `Blorptang message ${tag}`, described: `Blorptang capture ${tag}` };
  const url = `https://img.example/ret-${tag}.png`;
  const actor = { kind: 'agent' as const, chatId: staff.chat_id, name: staff.name };
  await db.transaction(async (tx) => {
    // An earlier life of the id, deleted: its pre-image names the same people.
    const preImage = { report_id: reportId, reporter, reported, reporter_name: reporterName, reported_name: reportedName, reason: words.reason, status: 'Open' };
    await tx.query(`insert into deleted_reports (report_id, pre_image, reason, deleted_by_kind, deleted_by_chat_id, correlation_id) values ($1::text, $2::jsonb, 'Duplicate', 'agent', $3::text, $4::text)`,
      [reportId, JSON.stringify(preImage), staff.chat_id, `c-${tag}`]);
    await recordEvent(tx, { type: 'report.deleted', actor, correlationId: `c-${tag}`, reportId, before: preImage, data: { reason: 'Duplicate' } });
    await tx.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, evidence_url, assigned_agent, status, updated_at)
       values ($1::text, $2::text, $3::text, $4::text, $5::text, 'see capture', $6::text, $7::text, $8::text, $9::text, $10::text, now() - make_interval(days => $11::int))`,
      [reportId, reporter, reported, words.reason, words.notes, reporterName, reportedName, url, staff.chat_id, options.status ?? 'Validated', options.closedDaysAgo],
    );
    await tx.query(`insert into report_notes (report_id, note, author_kind, author_chat_id, author_name) values ($1::text, $2::text, 'agent', $3::text, $4::text)`,
      [reportId, `Spoke with ${reportedName}; the reporter said "${words.message}"`, staff.chat_id, staff.name]);
    await tx.query(`insert into report_evidence (report_id, description, url, submitted_by) values ($1::text, $2::text, $3::text, $4::text)`, [reportId, words.described, url, reporter]);
    await tx.query(`insert into report_timeline (report_id, event, actor_kind, actor_chat_id, actor_name) values ($1::text, $2::text, 'agent', $3::text, $4::text)`,
      [reportId, `Evidence added: ${words.described}`, staff.chat_id, staff.name]);
    await tx.query(`insert into contact_threads (report_id) values ($1::text)`, [reportId]);
    await tx.query(`insert into contact_messages (report_id, direction, body, sender_chat_id, sender_name) values ($1::text, 'from_reporter', $2::text, null, $3::text)`, [reportId, words.message, reporterName]);
    await tx.query(`insert into report_actions (report_id, kind, queue, payload, requested_by) values ($1::text, 'contact_reporter', 'operator', $2::jsonb, $3::text)`,
      [reportId, JSON.stringify({ body: 'Please send proof', reporter, thread_id: null }), staff.chat_id]);
    await recordEvent(tx, {
      type: 'report.created', actor, correlationId: `c-${tag}`, reportId,
      after: { report_id: reportId, reporter, reported, reporter_name: reporterName, reported_name: reportedName, reason: words.reason, notes: words.notes },
    });
    await recordAudit(tx, { actor, action: 'admin.report_corrected', target: reportId, reason: `Typo in ${reportedName}`, before: { reported_name: 'grim' }, after: { reported_name: reportedName }, correlationId: `c-${tag}` });
  });
  return { reportId, reporter, reported, secrets: [reporter, reported, reporterName, reportedName, ...Object.values(words), url] };
}
