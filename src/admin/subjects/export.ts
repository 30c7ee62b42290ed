// Subject access (issue 32; GDPR article 15): everything held about one chat id, in one JSON
// document grouped by kind, each row with its id and time, other people's identities and words
// withheld and counted (disclose.ts). GET /admin/subjects/<chat_id> answers
// it and `cli subject-export` writes it to a file: exportSubject builds both, and records the
// export (an admin audit row and the admin.subject_exported event, with the counts, never the rows).
import type { Tx } from '../../platform/db/types.js';
import type { Actor } from '../../platform/events.js';
import { recordAdminChangeBy } from '../trail.js';
import { KINDS } from './catalogue.js';
import { discloseRow, withholdNames, type Requester, type WithheldReason } from './disclose.js';
import { collectTerms as ownTerms, wholeWords } from './scrub.js';
import { findSubjectRows, storedColumns, type FoundRow } from './queries.js';

export interface ExportedRow {
  id: string;
  at: string | null;
  row: Record<string, unknown>;
}

export interface SubjectExport {
  success: true;
  chat_id: string;
  exported_at: string;
  /** The export's admin audit row and event. */
  correlation_id: string;
  /** Rows in all kinds (a row read by two kinds, such as a report filed against oneself, counts twice). */
  total: number;
  /** Rows per kind; every kind of the catalogue is present, empty when nothing of it names them. */
  kinds: Record<string, ExportedRow[]>;
  /** What of other people was withheld (disclose.ts), counted per kind and reason. */
  withheld: { total: number; rows_withheld_whole: number; kinds: Record<string, Partial<Record<WithheldReason, number>>>; why: string };
}

const WHY =
  "Other people's identities and words are withheld (GDPR article 15(4)): other parties' chat ids, names and what they wrote " +
  '(other_people), who on staff acted (staff), and the contact threads between another reporter and staff about cases naming you ' +
  '(contact_of_others, withheld whole). Decisions about you, their terms and the content of staff notes about you are shown.';

/** The person's part in each case, from the rows found: which reports name them as what. */
function requesterOf(chatId: string, found: readonly FoundRow[]): Requester {
  const reportedIn = new Set<string>();
  const reporterIn = new Set<string>();
  for (const { entry, row } of found) {
    if (entry.table !== 'reports') continue;
    if (row.reporter === chatId) reporterIn.add(String(row.report_id));
    else if (row.reported === chatId) reportedIn.add(String(row.report_id));
  }
  return { chatId, reportedIn, reporterIn };
}

export async function exportSubject(tx: Tx, chatId: string, actor: Actor | { kind: 'operator' }, correlationId: string): Promise<SubjectExport> {
  const { found } = await findSubjectRows(tx, chatId);
  const who = requesterOf(chatId, found);
  const kinds: Record<string, ExportedRow[]> = Object.fromEntries(KINDS.map((k) => [k, []]));
  const withheld: SubjectExport['withheld'] = { total: 0, rows_withheld_whole: 0, kinds: {}, why: WHY };
  const count = (kind: string, reason: WithheldReason, n: number) => {
    const tally = (withheld.kinds[kind] ??= {});
    tally[reason] = (tally[reason] ?? 0) + n;
    withheld.total += n;
  };
  const disclosed = found.map(({ entry, row }) => ({ entry, row, shown: discloseRow(entry, row, who) }));
  // Other people's names and chat ids, found where they were withheld, and the names of the staff
  // among them, are withheld again where a shown text quotes them; never a name inside their own.
  const withheldNames = new Set(disclosed.flatMap(({ shown }) => [...shown.names]));
  const { rows: staffNames } = await tx.query<{ name: string }>('select name from agents where chat_id = any($1::text[]) and name is not null', [[...withheldNames]]);
  for (const { name } of staffNames) withheldNames.add(name);
  const own = ownTerms([chatId], found).filter((term) => term.length >= 3);
  const ownName = (name: string) => own.some((term) => wholeWords(name).test(term));
  const names = [...withheldNames].filter((n) => n.length >= 3 && !ownName(n)).map(wholeWords);
  for (const { entry, row, shown } of disclosed) {
    for (const [reason, n] of Object.entries(shown.withheld) as [WithheldReason, number][]) count(entry.kind, reason, n);
    if (shown.row === undefined) {
      withheld.rows_withheld_whole++;
      continue;
    }
    const quoted = withholdNames(storedColumns(shown.row), names);
    if (quoted.withheld > 0) count(entry.kind, 'other_people', quoted.withheld);
    kinds[entry.kind]!.push({ id: String(row._id), at: (row._at as string | null) ?? null, row: quoted.row });
  }
  for (const [kind, tally] of Object.entries(withheld.kinds)) if (Object.keys(tally).length === 0) delete withheld.kinds[kind];
  const counts = Object.fromEntries(Object.entries(kinds).filter(([, rows]) => rows.length > 0).map(([k, rows]) => [k, rows.length]));
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  await recordAdminChangeBy(tx, actor, correlationId, {
    action: 'admin.subject_exported',
    target: chatId,
    reason: 'Subject access request: everything held about the chat id exported',
    after: { total, counts },
  });
  const { rows } = await tx.query<{ now: string }>('select now() as now');
  return { success: true, chat_id: chatId, exported_at: rows[0]!.now, correlation_id: correlationId, total, kinds, withheld };
}
