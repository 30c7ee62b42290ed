// Finding one person's rows through the catalogue (issue 32): their reports first (by reporter and
// reported, and the deleted reports whose pre-image names them), then every catalogue query with
// those ids; events and admin audit rows are kept when a personal leaf names the person.
import { personalLeaves } from '../../platform/audit-chain/personal-fields.js';
import type { Queryable } from '../../platform/db/types.js';
import { CATALOGUE, type CatalogueEntry } from './catalogue.js';
import { collectTerms, namesSubject, type Subject } from './scrub.js';

export interface FoundRow {
  entry: CatalogueEntry;
  row: Record<string, unknown>;
}

export interface SubjectRows {
  chatId: string;
  /** Their names and words, learned from their rows (scrub.ts). */
  terms: string[];
  /** Every row naming them, catalogue order; a row read by two kinds appears under both. */
  found: FoundRow[];
}

interface ReportIds {
  live: string[];
  deleted: number[];
  all: string[];
}

// Two index lookups rather than one `or`: each side reads its own index (0027).
export const REPORT_IDS_SQL = 'select report_id from reports where reporter = $1::text union select report_id from reports where reported = $1::text';
export const DELETED_REPORT_IDS_SQL = `select id, report_id from deleted_reports where pre_image ->> 'reporter' = $1::text
  union select id, report_id from deleted_reports where pre_image ->> 'reported' = $1::text`;

async function findReportIds(db: Queryable, chatId: string): Promise<ReportIds> {
  const live = await db.query<{ report_id: string }>(REPORT_IDS_SQL, [chatId]);
  const deleted = await db.query<{ id: number; report_id: string }>(DELETED_REPORT_IDS_SQL, [chatId]);
  const liveIds = live.rows.map((r) => r.report_id);
  return { live: liveIds, deleted: deleted.rows.map((r) => r.id), all: [...new Set([...liveIds, ...deleted.rows.map((r) => r.report_id)])] };
}

/**
 * The statement with only the parameters it names, renumbered: a prepared statement must use
 * (and be able to type) every parameter it is given, and each catalogue query names a few of four.
 */
export function bind(sql: string, params: readonly unknown[]): [string, unknown[]] {
  const used = [...new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => `$${used.indexOf(Number(n)) + 1}`);
  return [text, used.map((n) => params[n - 1])];
}

/**
 * The rows the given catalogue entries return for `params`: the mutable tables' rows in `found`
 * (locked for update, in catalogue order, with `lock`, so an erasure works on rows nobody changes
 * under it) and the sealed tables' candidates apart, for the caller to keep those naming someone.
 */
export async function readEntries(db: Queryable, entries: readonly CatalogueEntry[], params: readonly unknown[], lock: boolean): Promise<{ found: FoundRow[]; sealed: FoundRow[] }> {
  const found: FoundRow[] = [];
  const sealed: FoundRow[] = [];
  for (const entry of entries) {
    const locking = lock && entry.erase !== 'sealed' ? ' for update' : '';
    const { rows } = await db.query<Record<string, unknown>>(...bind(`${entry.sql}${locking}`, params));
    for (const row of rows) (entry.erase === 'sealed' ? sealed : found).push({ entry, row });
  }
  return { found, sealed };
}

/** The sealed rows with a personal leaf naming one of them (by chat id, name or words). */
export function sealedNaming(sealed: readonly FoundRow[], subjects: readonly Pick<Subject, 'chatId' | 'terms'>[]): FoundRow[] {
  return sealed.filter((item) => {
    const source = item.entry.table as 'events' | 'audit_log';
    return personalLeaves(source, item.row).some((leaf) => subjects.some((subject) => namesSubject(leaf.value, subject)));
  });
}

/**
 * Every row that names the person; with `lock`, the mutable tables' rows locked (readEntries). An
 * erasure gives their pseudonym too: the reports an earlier erasure left naming it are still
 * theirs, with what was written on them since (a message the bot relayed from them).
 */
export async function findSubjectRows(db: Queryable, chatId: string, { lock = false, pseudonym }: { lock?: boolean; pseudonym?: string } = {}): Promise<SubjectRows> {
  const ids = await findReportIds(db, chatId);
  if (pseudonym !== undefined) {
    const earlier = await findReportIds(db, pseudonym);
    ids.live = [...new Set([...ids.live, ...earlier.live])];
    ids.deleted = [...new Set([...ids.deleted, ...earlier.deleted])];
    ids.all = [...new Set([...ids.all, ...earlier.all])];
  }
  const { found, sealed } = await readEntries(db, CATALOGUE, [chatId, ids.live, ids.deleted, ids.all], lock);
  const terms = collectTerms(pseudonym === undefined ? [chatId] : [chatId, pseudonym], found);
  found.push(...sealedNaming(sealed, [{ chatId, terms }]));
  found.sort((a, b) => CATALOGUE.indexOf(a.entry) - CATALOGUE.indexOf(b.entry));
  return { chatId, terms, found };
}

/** The row as stored, without the lookup's own columns (`_id`, `_at`, `_owner`). */
export const storedColumns = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('_')));
