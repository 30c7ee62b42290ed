// What every erasure of issue 32 does to the rows it found, whoever asked: a subject erasure
// (erase.ts) for one person everywhere, the retention (src/admin/retention) for the people of one
// closed case in that case's rows. Each person's rules are scrub.ts's, applied one person after
// the other to the same row, so one update per row carries them all.
import type { Tx } from '../../platform/db/types.js';
import type { CatalogueEntry } from './catalogue.js';
import type { FoundRow } from './queries.js';
import { erasedColumns, type Subject } from './scrub.js';

/**
 * A punishment in force against any of them on the chat platform: Active or Appealed (past its
 * expiry too, until the sweep expires it), or ended here but not yet lifted there, its revoke or
 * expire delivery pending, processing or failed (a cancelled one was given up by an operator).
 * An erasure would rewrite the delivery's target to the pseudonym, and the ban would never lift
 * (issue 39, finding 6). Its id, and whether it is the lifting that is held up.
 */
export async function punishmentInForce(tx: Tx, chatIds: readonly string[]): Promise<{ punishmentId: string; lifting: boolean } | undefined> {
  const { rows } = await tx.query<{ punishment_id: string; lifting: boolean }>(
    `select punishment_id, false as lifting, created_at from punishments where user_id = any($1::text[]) and status in ('Active', 'Appealed')
     union all
     select punishment_id, true, created_at from discipline_deliveries
      where user_id = any($1::text[]) and kind in ('revoke', 'expire') and status in ('pending', 'processing', 'failed')
     order by lifting, created_at, punishment_id limit 1`,
    [chatIds],
  );
  const row = rows[0];
  return row && { punishmentId: row.punishment_id, lifting: row.lifting };
}

/** The refusal of an erasure while a punishment is in force (punishmentInForce). */
export const inForceMessage = ({ punishmentId, lifting }: { punishmentId: string; lifting: boolean }) =>
  lifting
    ? `Punishment ${punishmentId} against this person has ended, but its lifting on the chat platform has not completed: wait for the bot, or requeue or cancel its delivery`
    : `Punishment ${punishmentId} against this person is still in force: revoke it or let it expire first`;

const columnCast = (entry: CatalogueEntry, column: string) => (entry.columns[column] === 'json' ? 'jsonb' : 'text');

/** The columns the erasure of every person changes, each person's rules applied to the row the one before left. */
function changesFor(entry: CatalogueEntry, row: Record<string, unknown>, subjects: readonly Subject[]): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  let current = row;
  for (const subject of subjects) {
    const next = erasedColumns(entry, current, subject);
    Object.assign(changes, next);
    current = { ...current, ...next };
  }
  return changes;
}

async function eraseRow(tx: Tx, entry: CatalogueEntry, row: Record<string, unknown>, subjects: readonly Subject[]): Promise<boolean> {
  const keyValues = entry.key.map((k) => row[k]);
  const where = entry.key.map((k, i) => `${k} = $${i + 1}`).join(' and ');
  if (entry.erase === 'delete') {
    const { rowCount } = await tx.query(`delete from ${entry.table} where ${where}`, keyValues);
    return rowCount > 0;
  }
  const changes = Object.entries(changesFor(entry, row, subjects));
  if (changes.length === 0) return false;
  const sets = changes.map(([column], i) => `${column} = $${entry.key.length + i + 1}::${columnCast(entry, column)}`);
  const values = changes.map(([column, value]) => (columnCast(entry, column) === 'jsonb' ? JSON.stringify(value) : value));
  const { rowCount } = await tx.query(`update ${entry.table} set ${sets.join(', ')} where ${where}`, [...keyValues, ...values]);
  return rowCount > 0;
}

/** The rows of the mutable tables, once each (kinds that read one table overlap), in catalogue order. */
function distinctRows(found: readonly FoundRow[]): FoundRow[] {
  const seen = new Set<string>();
  return found.filter(({ entry, row }) => {
    if (entry.erase === 'sealed') return false;
    const id = JSON.stringify([entry.table, ...entry.key.map((k) => row[k])]);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** Erases the people's data from the found rows of the mutable tables; rows changed (or deleted) per table. */
export async function eraseMutableRows(tx: Tx, found: readonly FoundRow[], subjects: readonly Subject[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { entry, row } of distinctRows(found)) {
    if (await eraseRow(tx, entry, row, subjects)) counts[entry.table] = (counts[entry.table] ?? 0) + 1;
  }
  return counts;
}

/** Adds the rows of the sealed tables to the counts, leaving out tables with none. */
export function addSealedCounts(counts: Record<string, number>, sealed: { events: number; audit_log: number }): Record<string, number> {
  for (const table of ['events', 'audit_log'] as const) if (sealed[table] > 0) counts[table] = (counts[table] ?? 0) + sealed[table];
  return counts;
}
