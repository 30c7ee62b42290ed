// move-to-postgres: an embedded environment copied into an empty PostgreSQL database. Everything
// on the target happens in one transaction: the same migrations, the rows of every table copied in
// batches, every sequence set where the source's stands, then every table's row count and checksum
// compared with the source's. Any difference, any failure: the transaction rolls back and the
// target is left as empty as it was.
import { applyMigration, type Migration } from '../db/migrate.js';
import type { Db, Tx } from '../db/types.js';
import {
  CANONICAL_TEXT_SETTINGS,
  ident,
  listSequences,
  listTables,
  readSequence,
  tableChecksum,
  type TableInfo,
} from './catalog.js';

/** Rows per fetch from the source and per insert on the target. */
const BATCH_ROWS = 1_000;

/** The move was refused or its checks failed; nothing was written to the target. */
export class MoveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoveError';
  }
}

export interface MoveResult {
  tables: { name: string; rows: number }[];
  sequences: number;
}

/** Relations of any kind outside the system schemas: an empty database has none. */
async function targetRelations(target: Db): Promise<string[]> {
  const { rows } = await target.query<{ name: string }>(
    `select n.nspname || '.' || c.relname as name
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p', 'v', 'm', 'S', 'f') and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname !~ '^pg_'
      order by 1 limit 5`,
  );
  return rows.map((r) => r.name);
}

function sameTables(source: TableInfo[], target: TableInfo[]): string | undefined {
  const describe = (tables: TableInfo[]) => tables.map((t) => `${t.name}(${t.columns.join(',')})`).sort().join(' ');
  const [s, t] = [describe(source), describe(target)];
  return s === t ? undefined : `the migrated target's tables differ from the source's:\n  source: ${s}\n  target: ${t}`;
}

/** Copies one table's rows through a cursor on the source, a batch per insert on the target. */
async function copyTable(source: Tx, target: Tx, table: TableInfo, index: number): Promise<number> {
  const cursor = `move_${index}`;
  const columns = table.insertable.map(ident).join(', ');
  await source.exec(`declare ${cursor} no scroll cursor for select row_to_json(t)::text as r from ${ident(table.name)} t`);
  let copied = 0;
  for (;;) {
    const { rows } = await source.query<{ r: string }>(`fetch ${BATCH_ROWS} from ${cursor}`);
    if (rows.length === 0) break;
    // The rows' JSON turned back into the table's own types, identity values kept as they were.
    await target.query(
      `insert into ${ident(table.name)} (${columns}) overriding system value
       select ${columns} from json_populate_recordset(null::${ident(table.name)}, $1::json)`,
      [`[${rows.map((row) => row.r).join(',')}]`],
    );
    copied += rows.length;
  }
  await source.exec(`close ${cursor}`);
  return copied;
}

export async function moveToPostgres(source: Db, target: Db, migrations: Migration[]): Promise<MoveResult> {
  const occupied = await targetRelations(target);
  if (occupied.length > 0) {
    throw new MoveError(`the target database is not empty (it has ${occupied.join(', ')}${occupied.length === 5 ? ', …' : ''}): move-to-postgres only fills an empty database; nothing was written`);
  }
  // The source's transaction gives one consistent view for the copy and the checks.
  return source.transaction((stx) =>
    target.transaction(async (ttx) => {
      await stx.exec(CANONICAL_TEXT_SETTINGS);
      for (const migration of migrations) await applyMigration(ttx, migration);
      await ttx.exec(CANONICAL_TEXT_SETTINGS);

      const tables = await listTables(ttx);
      const mismatch = sameTables(await listTables(stx), tables);
      if (mismatch) throw new MoveError(mismatch);

      // Rows arrive as they are: the triggers that keep counters or notify must not fire again
      // (the counter tables are copied too). The tables were created in this transaction, so
      // their owner may switch their own triggers off; foreign keys stay checked, parents first.
      for (const t of tables) await ttx.exec(`alter table ${ident(t.name)} disable trigger user`);
      // What the migrations wrote (schema_migrations, singleton rows) gives way to the source's.
      for (const t of [...tables].reverse()) await ttx.exec(`delete from ${ident(t.name)}`);
      const result: MoveResult = { tables: [], sequences: 0 };
      for (const [index, t] of tables.entries()) result.tables.push({ name: t.name, rows: await copyTable(stx, ttx, t, index) });

      const sequences = await listSequences(stx);
      for (const seq of sequences) {
        const state = await readSequence(stx, seq.name);
        await ttx.query('select setval($1::regclass, $2::bigint, $3::boolean)', [ident(seq.name), state.last_value, state.is_called]);
      }
      result.sequences = sequences.length;
      for (const t of tables) await ttx.exec(`alter table ${ident(t.name)} enable trigger user`);

      const problems: string[] = [];
      for (const t of tables) {
        const [s, d] = [await tableChecksum(stx, t.name), await tableChecksum(ttx, t.name)];
        if (s.rows !== d.rows) problems.push(`${t.name}: ${s.rows} rows in the source, ${d.rows} in the target`);
        else if (s.checksum !== d.checksum) problems.push(`${t.name}: the rows' checksums differ (${s.checksum} against ${d.checksum})`);
      }
      for (const seq of sequences) {
        const [s, d] = [await readSequence(stx, seq.name), await readSequence(ttx, seq.name)];
        if (s.last_value !== d.last_value || s.is_called !== d.is_called) problems.push(`sequence ${seq.name}: ${s.last_value} in the source, ${d.last_value} in the target`);
      }
      if (problems.length > 0) throw new MoveError(`the copy does not match the source, so nothing was written:\n  ${problems.join('\n  ')}`);
      return result;
    }),
  );
}
