// Bulk data for the at-scale benchmarks, generated inside the database (generate_series) in
// batches: reports spread over the statuses, a tenth supervisor-flagged, one per minute back in
// time; events of the common types about those reports, by a handful of named agents, each
// carrying its report's flag where the schema still copies it into events (before issue 28).
import type { Db } from '../../src/platform/db/types.js';

const BATCH = 100_000;

const REPORTS_SQL = `
insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, status,
                     is_supervisor, created_at, updated_at)
select 'BENCH-' || lpad(g::text, 8, '0'),
       (300000000000000000 + (g * 7919) % 900000000)::text,
       (400000000000000000 + (g * 104729) % 900000000)::text,
       (array['Harassment in voice chat', 'Fail roleplay', 'Exploiting a map glitch', 'Slurs in global chat',
              'Impersonating staff', 'Combat logging'])[1 + g % 6] || ' (case ' || g || ')',
       '', 'See attached evidence', 'reporter' || (g % 5000), 'player' || (g % 20000),
       (array['Open', 'Under Investigation', 'Pending', 'Appealed', 'Validated', 'Invalidated'])[1 + (g * 31) % 6],
       g % 10 = 0, now() - make_interval(secs => g * 60), now() - make_interval(secs => g * 60 - (g % 7) * 3600)
from generate_series($1::bigint, $2::bigint) as g`;

/** The event's report number (1 to the report count; `$3`), the same expression in both places it is used. */
const EVENT_REPORT = '1 + (g * 13) % $3::bigint';

/** `flagColumn`: the events' copy of their report's flag, when the schema has one. */
const eventsSql = (flagColumn: boolean) => `
insert into events (type, actor_kind, actor_chat_id, actor_name, report_id, before, after, correlation_id${flagColumn ? ', is_supervisor' : ''}, created_at)
select (array['report.created', 'report.status_changed', 'report.assigned', 'report.note_added', 'contact.message_added',
              'report.updated'])[1 + g % 6],
       'agent', (200000000000000000 + g % 50)::text,
       (array['Morgan Hale', 'Riley Castellano', 'Jordan Pike', 'Avery Lindqvist', 'Casey Moreau', 'Drew Nakamura',
              'Elliot Varga', 'Kai Brennan'])[1 + g % 8],
       'BENCH-' || lpad((${EVENT_REPORT})::text, 8, '0'),
       jsonb_build_object('status', 'Open'),
       jsonb_build_object('status', 'Pending', 'note', 'checked footage batch ' || g),
       'bench-' || g${flagColumn ? `, (${EVENT_REPORT}) % 10 = 0` : ''}, now() - make_interval(secs => g * 30)
from generate_series($1::bigint, $2::bigint) as g`;

async function inBatches(db: Db, total: number, sql: string, extra: unknown[] = []): Promise<void> {
  for (let from = 1; from <= total; from += BATCH) {
    await db.query(sql, [from, Math.min(total, from + BATCH - 1), ...extra]);
  }
}

/**
 * Writes `reports` reports and `events` events, then vacuums and analyses what they touched, as
 * autovacuum would after such a load (the list counters otherwise carry a million dead row
 * versions until it gets there), so that the figures are those of a settled database; a caller
 * that builds indexes afterwards (bench/lib/kept-database.ts) vacuums after that instead.
 */
export async function generateReportsAndEvents(db: Db, counts: { reports: number; events: number }, options: { analyse?: boolean } = {}): Promise<void> {
  await inBatches(db, counts.reports, REPORTS_SQL);
  const { rows } = await db.query<{ flag: boolean }>(
    `select exists (select 1 from information_schema.columns
                     where table_schema = current_schema() and table_name = 'events' and column_name = 'is_supervisor') as flag`,
  );
  await inBatches(db, counts.events, eventsSql(rows[0]?.flag === true), [counts.reports]);
  if (options.analyse === false) return;
  // One statement per call: VACUUM cannot run inside the implicit transaction of a multi-statement string.
  for (const table of ['reports', 'report_counts', 'events']) await db.exec(`vacuum analyze ${table}`);
}
