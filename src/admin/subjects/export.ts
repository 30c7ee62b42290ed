// Subject access (issue 32; GDPR article 15): everything held about one chat id, in one JSON
// document grouped by kind, each row with its id and time. GET /admin/subjects/<chat_id> answers
// it and `cli subject-export` writes it to a file: exportSubject builds both, and records the
// export (an admin audit row and the admin.subject_exported event, with the counts, never the rows).
import type { Tx } from '../../platform/db/types.js';
import type { Actor } from '../../platform/events.js';
import { recordAdminChangeBy } from '../trail.js';
import { KINDS } from './catalogue.js';
import { findSubjectRows, storedColumns } from './queries.js';

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
}

export async function exportSubject(tx: Tx, chatId: string, actor: Actor | { kind: 'operator' }, correlationId: string): Promise<SubjectExport> {
  const { found } = await findSubjectRows(tx, chatId);
  const kinds: Record<string, ExportedRow[]> = Object.fromEntries(KINDS.map((k) => [k, []]));
  for (const { entry, row } of found) {
    kinds[entry.kind]!.push({ id: String(row._id), at: (row._at as string | null) ?? null, row: storedColumns(row) });
  }
  const counts = Object.fromEntries(Object.entries(kinds).filter(([, rows]) => rows.length > 0).map(([k, rows]) => [k, rows.length]));
  await recordAdminChangeBy(tx, actor, correlationId, {
    action: 'admin.subject_exported',
    target: chatId,
    reason: 'Subject access request: everything held about the chat id exported',
    after: { total: found.length, counts },
  });
  const { rows } = await tx.query<{ now: string }>('select now() as now');
  return { success: true, chat_id: chatId, exported_at: rows[0]!.now, correlation_id: correlationId, total: found.length, kinds };
}
