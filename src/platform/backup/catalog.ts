// What move-to-postgres (and restore's emptiness check) reads from the catalog: the tables of the
// public schema in foreign-key order, their columns, the sequences they own, and a checksum of a
// table's rows computed by the same statement on both stores.
import type { Queryable } from '../db/types.js';

export interface TableInfo {
  name: string;
  /** Every column, in the table's order. */
  columns: string[];
  /** The columns a copy writes: not the generated ones (those are computed again). */
  insertable: string[];
}

export interface SequenceInfo {
  name: string;
  table: string;
  column: string;
}

/** A double-quoted identifier. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Settings under which a row's text is the same on any PostgreSQL (time zone, date and interval
 * styles, float digits, bytea). `set local`: only for the transaction that runs them.
 */
export const CANONICAL_TEXT_SETTINGS = [
  "set local timezone = 'UTC'",
  "set local datestyle = 'ISO, YMD'",
  "set local intervalstyle = 'postgres'",
  'set local extra_float_digits = 1',
  "set local bytea_output = 'hex'",
].join(';\n');

/** The public schema's tables, each after the tables its foreign keys point to. */
export async function listTables(q: Queryable): Promise<TableInfo[]> {
  const { rows: columns } = await q.query<{ table: string; column: string; generated: boolean }>(
    `select c.relname as table, a.attname as column, a.attgenerated <> '' as generated
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = 'public' and c.relkind in ('r', 'p')
      order by c.relname, a.attnum`,
  );
  const { rows: keys } = await q.query<{ child: string; parent: string }>(
    `select c.relname as child, p.relname as parent
       from pg_constraint k
       join pg_class c on c.oid = k.conrelid
       join pg_class p on p.oid = k.confrelid
       join pg_namespace n on n.oid = c.relnamespace
      where k.contype = 'f' and n.nspname = 'public' and c.oid <> p.oid`,
  );
  const tables = new Map<string, TableInfo>();
  for (const { table, column, generated } of columns) {
    const info = tables.get(table) ?? { name: table, columns: [], insertable: [] };
    info.columns.push(column);
    if (!generated) info.insertable.push(column);
    tables.set(table, info);
  }
  const ordered: TableInfo[] = [];
  const placed = new Set<string>();
  while (placed.size < tables.size) {
    const ready = [...tables.keys()].filter((t) => !placed.has(t) && keys.every((k) => k.child !== t || placed.has(k.parent) || !tables.has(k.parent)));
    if (ready.length === 0) throw new Error(`foreign keys form a cycle among ${[...tables.keys()].filter((t) => !placed.has(t)).join(', ')}`);
    for (const t of ready.sort()) {
      placed.add(t);
      ordered.push(tables.get(t)!);
    }
  }
  return ordered;
}

/** Sequences owned by a column of a public table (identity and serial columns). */
export async function listSequences(q: Queryable): Promise<SequenceInfo[]> {
  const { rows } = await q.query<SequenceInfo>(
    `select s.relname as name, t.relname as table, a.attname as column
       from pg_class s
       join pg_depend d on d.objid = s.oid and d.classid = 'pg_class'::regclass and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
       join pg_class t on t.oid = d.refobjid
       join pg_attribute a on a.attrelid = t.oid and a.attnum = d.refobjsubid
       join pg_namespace n on n.oid = s.relnamespace
      where s.relkind = 'S' and n.nspname = 'public'
      order by s.relname`,
  );
  return rows;
}

export interface SequenceState {
  last_value: number;
  is_called: boolean;
}

export async function readSequence(q: Queryable, name: string): Promise<SequenceState> {
  return (await q.query<SequenceState>(`select last_value, is_called from ${ident(name)}`)).rows[0]!;
}

export interface TableSum {
  rows: number;
  /** Two sums of 60-bit slices of every row's md5: independent of row order and collation. */
  checksum: string;
}

/** Row count and checksum of a table (run under CANONICAL_TEXT_SETTINGS on both sides). */
export async function tableChecksum(q: Queryable, table: string): Promise<TableSum> {
  const { rows } = await q.query<TableSum>(
    `select count(*) as rows,
            coalesce(sum(('x' || substr(h, 1, 15))::bit(60)::bigint), 0)::text || '/' ||
            coalesce(sum(('x' || substr(h, 16, 15))::bit(60)::bigint), 0)::text as checksum
       from (select md5(t::text) as h from ${ident(table)} t) hashed`,
  );
  return rows[0]!;
}

/** Tables that migrations themselves fill: their rows do not make an environment non-empty. */
const MIGRATION_FILLED = new Set(['schema_migrations', 'health_state']);

/** The tables holding data (beyond what migrations write), for restore's emptiness check. */
export async function tablesWithRows(q: Queryable): Promise<string[]> {
  const found: string[] = [];
  for (const { name } of await listTables(q)) {
    if (MIGRATION_FILLED.has(name)) continue;
    const { rows } = await q.query<{ any: boolean }>(`select exists (select 1 from ${ident(name)}) as any`);
    if (rows[0]!.any) found.push(name);
  }
  return found;
}
