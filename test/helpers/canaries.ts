// Canaries for issue 28's confidentiality crawl: a unique string in every text a report can carry,
// planted through the API as the service's callers would write them (the bot's key, the assigned
// Director's session), so each lands in every copy the service makes of it: the row, its events,
// the admin audit, queue payloads, deliveries and snapshots.
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { PRODUCTION_KEY, type TestApp } from './app.js';
import { chatId, type Person } from './identity.js';

/** Every text a report can carry, by the route that writes it. */
export const CANARY_KINDS = [
  // POST /reports/create (the bot)
  'reason', 'notes', 'evidence', 'evidence_url', 'reporter_name', 'reported_name', 'thread_id',
  // POST /reports/<id>/action investigate (the queue payload), then the bot fails the action with a note
  'action_reason', 'failure_note',
  // the contact thread: contact_reporter's reason (first message and queue payload), a reply, the reporter's answer
  'contact_opening', 'contact_reply', 'contact_response', 'contact_sender',
  // working data of the investigation
  'note', 'evidence_description', 'evidence_row_url', 'timeline',
  // POST /reports/<id>/chat-profiles (the bot)
  'reporter_username', 'reporter_global_name', 'reported_username', 'reported_global_name',
  // POST /admin/reports/<id>/correct: reported_name becomes corrected_name
  'corrected_name', 'correction_reason',
  // POST /punishments citing the report, and the bot's failed delivery of it
  'punishment_reason', 'punishment_detail', 'punishment_notes', 'punishment_evidence', 'punishment_username', 'delivery_note',
] as const;
export type CanaryKind = (typeof CANARY_KINDS)[number];

/** A: created supervisor-flagged; B: created unflagged and flagged by the bot once everything is planted. */
export type ReportTag = 'A' | 'B';

export interface Canary {
  text: string;
  report: ReportTag;
  kind: CanaryKind;
}

export interface PlantedReport {
  tag: ReportTag;
  reportId: string;
  reporter: string;
  reported: string;
  punishmentId: string;
  actionIds: number[];
  itemIds: number[];
  canary: Record<CanaryKind, string>;
}

const suffix = () => randomBytes(5).toString('hex');
/** `CANARY-A-reason-3f9c0a1b2e`: letters, digits, `-` and `_` only, so no JSON, URL or LIKE escaping changes it. */
const canaryText = (report: ReportTag, kind: CanaryKind) => `CANARY-${report}-${kind}-${suffix()}`;
const url = (text: string) => `https://evidence.example.test/case/${text}`;

const bot = { authorization: PRODUCTION_KEY, host: 'localhost' };

function must(res: LightMyRequestResponse, status: number, what: string): any {
  if (res.statusCode !== status) throw new Error(`planting failed at ${what}: ${res.statusCode} ${res.body}`);
  return res.body === '' ? undefined : res.json();
}

/**
 * Plants both reports' canaries; `director` is the supervisor principal both reports are assigned
 * to (a Director with clearance 5 on the admin allowlist: it may act on a flagged report, correct
 * it and issue a punishment citing it). Returns what was planted and the ids the crawl needs.
 */
export async function plantCanaries(t: TestApp, director: Person): Promise<PlantedReport[]> {
  const send = (method: 'GET' | 'POST' | 'PATCH', path: string, headers: Record<string, string>, payload?: object) =>
    t.app.inject({ method, url: path, headers, ...(payload === undefined ? {} : { payload }) });
  const as = director.headers;

  const reports: PlantedReport[] = (['A', 'B'] as const).map((tag, i) => ({
    tag,
    reportId: `SVC-CASE-9000${i + 1}`,
    reporter: chatId(),
    reported: chatId(),
    punishmentId: '',
    actionIds: [],
    itemIds: [],
    canary: Object.fromEntries(CANARY_KINDS.map((kind) => [kind, canaryText(tag, kind)])) as Record<CanaryKind, string>,
  }));

  for (const r of reports) {
    const c = r.canary;
    must(
      await send('POST', '/reports/create', bot, {
        report_id: r.reportId, reporter: r.reporter, reported: r.reported, reason: c.reason, notes: c.notes, evidence: c.evidence,
        reporter_name: c.reporter_name, reported_name: c.reported_name, thread_id: c.thread_id, evidence_url: url(c.evidence_url),
        assigned_agent: director.agent.chat_id, is_supervisor: r.tag === 'A',
      }),
      201, `create ${r.tag}`,
    );
    // Under Investigation from here: the session gates of notes, evidence and timeline entries.
    must(await send('POST', `/reports/${r.reportId}/action`, as, { action: 'investigate', reason: c.action_reason }), 200, `investigate ${r.tag}`);
  }

  // The bot takes each investigate action from the report's queue (the only one in it) and fails
  // it with a note: a failed item with result_note and last_error, kept in the queue lists.
  for (const r of reports) {
    const claimed = must(await send('GET', `/actions/next/${r.tag === 'A' ? 'supervisor' : 'operator'}`, bot), 200, `claim ${r.tag}`);
    if (claimed.action.report_id !== r.reportId) throw new Error(`planting: claimed ${claimed.action.report_id}, not ${r.reportId}`);
    r.actionIds.push(claimed.action.action_id);
    must(await send('POST', `/actions/${claimed.action.action_id}/complete`, bot, { result: 'failed', note: r.canary.failure_note }), 200, `fail ${r.tag}`);
  }

  for (const r of reports) {
    const c = r.canary;
    const id = r.reportId;
    // Pending queue items from here on: contact_reporter (its reason is the payload) and the reply.
    must(await send('POST', `/reports/${id}/action`, as, { action: 'contact_reporter', reason: c.contact_opening }), 200, `contact ${r.tag}`);
    must(await send('POST', `/reports/${id}/contact/reply`, as, { body: c.contact_reply }), 201, `reply ${r.tag}`);
    must(await send('POST', `/reports/${id}/contact/respond`, bot, { body: c.contact_response, sender_name: c.contact_sender }), 201, `respond ${r.tag}`);
    must(await send('POST', `/reports/${id}/notes`, as, { note: c.note }), 201, `note ${r.tag}`);
    must(await send('POST', `/reports/${id}/evidence`, as, { description: c.evidence_description, url: url(c.evidence_row_url) }), 201, `evidence ${r.tag}`);
    must(await send('POST', `/reports/${id}/timeline`, as, { event: c.timeline }), 201, `timeline ${r.tag}`);
    must(
      await send('POST', `/reports/${id}/chat-profiles`, bot, {
        reporter: { chat_id: r.reporter, username: c.reporter_username, global_name: c.reporter_global_name },
        reported: { chat_id: r.reported, username: c.reported_username, global_name: c.reported_global_name },
      }),
      200, `chat profiles ${r.tag}`,
    );
    must(
      await send('POST', `/admin/reports/${id}/correct`, as, { fields: { reported_name: c.corrected_name }, reason: c.correction_reason }),
      200, `correct ${r.tag}`,
    );
    // Punished: the reported party, whose profile is stored (so no user_lookup is queued).
    const issued = must(
      await send('POST', '/punishments', as, {
        user_id: r.reported, reason: c.punishment_reason, detailed_reason: c.punishment_detail, notes: c.punishment_notes,
        evidence: c.punishment_evidence, username: c.punishment_username, report_id: id,
      }),
      201, `punish ${r.tag}`,
    );
    r.punishmentId = issued.punishment.punishment_id;
    r.itemIds.push(issued.punishment.delivery.item_id);
  }

  // The bot fails each issue delivery transiently: back to pending (due in an hour), with its note
  // as last_error; the items stay in the pending lists and out of the final pickups.
  for (const r of reports) {
    const claimed = must(await send('GET', '/discipline/next', bot), 200, `delivery ${r.tag}`);
    if (claimed.item.item_id !== r.itemIds[0]) throw new Error(`planting: claimed delivery ${claimed.item.item_id}, not ${r.itemIds[0]}`);
    must(
      await send('POST', `/discipline/${claimed.item.item_id}/complete`, bot, { result: 'failed', note: r.canary.delivery_note, retry_after_seconds: 3600 }),
      200, `delivery failure ${r.tag}`,
    );
  }

  // Flagged after the fact, once every copy of B's texts exists (issue 28, finding 1).
  must(await send('PATCH', `/reports/${reports[1]!.reportId}/update`, bot, { is_supervisor: true }), 200, 'flag B');

  const { rows } = await t.db.production.query<{ action_id: number; report_id: string }>(
    'select action_id, report_id from report_actions where report_id = any($1::text[]) order by action_id',
    [reports.map((r) => r.reportId)],
  );
  for (const r of reports) r.actionIds = rows.filter((row) => row.report_id === r.reportId).map((row) => row.action_id);
  return reports;
}

/** Every canary of the planted reports. */
export const canariesOf = (reports: PlantedReport[]): Canary[] =>
  reports.flatMap((r) => CANARY_KINDS.map((kind) => ({ text: r.canary[kind], report: r.tag, kind })));

/**
 * The canaries in a response (body and headers, case-insensitively), leaving out those the request
 * itself carried: an answer that repeats the caller's own search term discloses nothing.
 */
export function canariesIn(canaries: Canary[], url: string, res: LightMyRequestResponse): Canary[] {
  const text = `${res.body}\n${JSON.stringify(res.headers)}`.toLowerCase();
  const asked = decodeURIComponent(url).toLowerCase();
  return canaries.filter((c) => {
    const needle = c.text.toLowerCase();
    return text.includes(needle) && !asked.includes(needle);
  });
}
