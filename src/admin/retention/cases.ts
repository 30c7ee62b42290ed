// Retention (issue 32, RETENTION_DAYS): the personal data of a case closed long enough ago is
// erased the way a subject erasure erases a person's (src/admin/subjects), but only in that case's
// rows: the report, its notes, evidence, timeline, contact thread and messages, queue items, the
// pre-images of earlier lives of its id (deleted reports), the punishments citing it and their
// deliveries, its events and admin audit rows. Its
// people are the non-staff chat ids of those rows (reporter, reported, who sent evidence); each
// one's names and words become the marker, their chat id their pseudonym. Staff, the case, its
// status and the punishments stay, as in a subject erasure. A case whose people have a punishment
// in force is held until there is none. Each erasure is recorded (case_erasures, an admin audit row).
import { randomUUID } from 'node:crypto';
import { isPseudonym, pseudonym } from '../../platform/audit-chain/personal-fields.js';
import type { Tx } from '../../platform/db/types.js';
import { CATALOGUE, type CatalogueEntry } from '../subjects/catalogue.js';
import { addSealedCounts, eraseMutableRows, punishmentInForce } from '../subjects/erase-rows.js';
import { eraseSealed } from '../subjects/erase-sealed.js';
import { readEntries, sealedNaming, type FoundRow } from '../subjects/queries.js';
import { collectTerms, type Subject } from '../subjects/scrub.js';
import { recordAdminChangeBy } from '../trail.js';

/** The reference every retention erasure is recorded (and reported by verify-audit) under. */
export const RETENTION_REFERENCE = 'retention';

export interface ClosedCase {
  reportId: string;
  /** The report's life (reports.creation_order, migration 0025). */
  life: number;
  /** The report's updated_at: the change that closed it, or a later one (docs/decisions.md). */
  closedAt: string;
  /** Its supervisor flag when erased: the event's is_supervisor, history only (docs/access.md). */
  flagged: boolean;
}

/** Past the retention, not erased since it was last changed; `skip` are the ones this pass held or failed. */
const CANDIDATES_WHERE = `r.status in ('Validated', 'Invalidated') and r.updated_at < now() - make_interval(days => $1::int)
  and not exists (select 1 from case_erasures e where e.report_id = r.report_id and e.report_life = r.creation_order and e.closed_at >= r.updated_at)`;

/** The oldest closed case waiting, locked; null when none is left (but those in `skip`). */
export async function nextClosedCase(tx: Tx, days: number, skip: readonly string[]): Promise<ClosedCase | null> {
  const { rows } = await tx.query<{ report_id: string; life: number; closed_at: string; is_supervisor: boolean }>(
    `select r.report_id, r.creation_order as life, r.updated_at as closed_at, r.is_supervisor from reports r
      where ${CANDIDATES_WHERE} and r.report_id <> all($2::text[])
      order by r.updated_at, r.report_id limit 1 for update of r`,
    [days, skip],
  );
  const row = rows[0];
  return row ? { reportId: row.report_id, life: Number(row.life), closedAt: row.closed_at, flagged: row.is_supervisor } : null;
}

/** How many closed cases wait for an erasure (those held included), counting stops at `cap`. */
export async function countWaiting(db: Pick<Tx, 'query'>, days: number, cap: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from (select 1 from reports r where ${CANDIDATES_WHERE} limit $2::int) w`, [days, cap]);
  return rows[0]!.n;
}

/** The case's own row (the catalogue finds reports by person) and every catalogue entry that follows a report id. */
const CASE_ENTRIES: readonly CatalogueEntry[] = [
  { ...CATALOGUE.find((e) => e.table === 'reports')!, kind: 'report', sql: 'select r.*, r.report_id as _id, r.created_at as _at from reports r where r.report_id = any($2::text[])' },
  ...CATALOGUE.filter((e) => e.table !== 'reports' && /\$[234]\b/.test(e.sql)),
  // The punishments citing the case and their deliveries: their terms stay, their people's chat ids and names go.
  {
    ...CATALOGUE.find((e) => e.table === 'punishments')!,
    sql: `select p.*, p.punishment_id as _id, p.created_at as _at from punishments p
          where p.report_id = any($2::text[]) or p.deleted_report = any($3::bigint[]) order by p.created_at, p.punishment_id`,
  },
  {
    ...CATALOGUE.find((e) => e.table === 'discipline_deliveries')!,
    sql: `select d.*, d.item_id::text as _id, d.created_at as _at from discipline_deliveries d
          where d.punishment_id in (select p.punishment_id from punishments p where p.report_id = any($2::text[]) or p.deleted_report = any($3::bigint[]))
          order by d.item_id`,
  },
];

/** Chat-id columns a case's people appear in; staff and the bot write the others. */
const PERSON_COLUMNS: Readonly<Record<string, readonly string[]>> = { reports: ['reporter', 'reported'], report_evidence: ['submitted_by'], punishments: ['user_id'] };

function peopleOf(found: readonly FoundRow[]): string[] {
  const people = new Set<string>();
  const add = (v: unknown) => typeof v === 'string' && v !== '' && !isPseudonym(v) && people.add(v);
  for (const { entry, row } of found) {
    for (const column of PERSON_COLUMNS[entry.table] ?? []) add(row[column]);
    if (entry.table === 'deleted_reports') {
      const pre = row.pre_image as Record<string, unknown> | null;
      add(pre?.reporter);
      add(pre?.reported);
    }
  }
  return [...people].sort();
}

export type CaseOutcome = { erased: true; erasureId: string; counts: Record<string, number> } | { erased: false; heldBy: string };

/** Erases one closed case, in the caller's transaction (which holds the retention lock). */
export async function eraseClosedCase(tx: Tx, key: Buffer, c: ClosedCase, days: number): Promise<CaseOutcome> {
  const { rows: lives } = await tx.query<{ id: number }>('select id from deleted_reports where report_id = $1::text order by id for update', [c.reportId]);
  const { found, sealed } = await readEntries(tx, CASE_ENTRIES, [null, [c.reportId], lives.map((l) => Number(l.id)), [c.reportId]], true);
  const people = peopleOf(found);
  const { rows: staff } = await tx.query<{ chat_id: string }>('select chat_id from agents where chat_id = any($1::text[])', [people]);
  const persons = people.filter((p) => !staff.some((s) => s.chat_id === p));
  const held = await punishmentInForce(tx, persons);
  if (held !== undefined) return { erased: false, heldBy: held.punishmentId };

  const subjects: Subject[] = persons.map((chatId) => ({ chatId, pseudonym: pseudonym(key, chatId), terms: collectTerms([chatId], found) }));
  const counts = await eraseMutableRows(tx, found, subjects);
  const correlationId = randomUUID();
  const { rows } = await tx.query<{ id: string }>(
    // closed_at from the row itself: its microseconds do not survive a round trip through JavaScript.
    `insert into case_erasures (report_id, report_life, closed_at, reference, counts, correlation_id)
     select r.report_id, r.creation_order, r.updated_at, $2::text, '{}'::jsonb, $3::text from reports r where r.report_id = $1::text
     returning id::text`,
    [c.reportId, RETENTION_REFERENCE, correlationId],
  );
  const erasureId = `case-${rows[0]!.id}`;
  const erasedSealed = await eraseSealed(tx, { id: erasureId, reference: RETENTION_REFERENCE }, sealedNaming(sealed, subjects), subjects);
  addSealedCounts(counts, erasedSealed);
  await tx.query('update case_erasures set counts = $2::jsonb where id = $1::bigint', [rows[0]!.id, JSON.stringify(counts)]);
  // The event names the case by report id, where the visibility model looks: the erasure (and its
  // admin audit row, by the event) is then exactly as hidden as the case is (issue 38, finding 5).
  await recordAdminChangeBy(tx, { kind: 'system' }, correlationId, {
    action: 'admin.case_erased',
    target: c.reportId,
    reason: `Retention: closed more than ${days} days ago (RETENTION_DAYS)`,
    // `fields`: what verify-audit accepts as erased in sealed rows (erasure-records.ts).
    after: { erasure_id: erasureId, reference: RETENTION_REFERENCE, closed_at: c.closedAt, people: persons.length, counts, fields: erasedSealed.fields },
    reportId: c.reportId,
    isSupervisor: c.flagged,
  });
  return { erased: true, erasureId, counts };
}
