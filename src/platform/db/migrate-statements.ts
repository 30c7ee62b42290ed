// The statements of a migration that runs outside a transaction (issue 40): a migration whose
// first line is `--! no-transaction` (graphile-migrate's marker) builds its indexes with CREATE
// INDEX CONCURRENTLY, which PostgreSQL refuses inside a transaction and which lets writes go on
// while it builds, and rewrites a large table in batches, each committed on its own. A plain
// CREATE INDEX holds a lock that stops every write to the table until its transaction ends: for
// a table of a million rows, seconds of 503s while a release migrates.
//
// Such a file is split into statements (dbgate-query-splitter: quotes, dollar quotes and comments
// understood) and each runs on its own. Two markers, in a comment line just before a statement:
// - `--! repeat until no rows`: the statement (an UPDATE or DELETE of a bounded batch, `where id in
//   (select ... limit 5000)`) runs again until it changes no row, each time committed alone;
// and each `create [unique] index concurrently` must say `if not exists`, so that a migration cut
// short runs again from its first statement (a failed concurrent build leaves an invalid index
// behind, dropped before the next try).
import { postgreSplitterOptions, splitQuery } from 'dbgate-query-splitter';

export const NO_TRANSACTION = /^--! no-transaction[ \t]*(\r?\n|$)/;
const REPEAT = /^--! repeat until no rows[ \t]*\r?$/m;
/** Any marker line: in a file without the first line's marker, one is a mistake (it would run in one transaction). */
const ANY_MARKER = /^[ \t]*--!/m;
const MARKER_LINES = /^[ \t]*--!.*$/gm;
/** PostgreSQL cuts a longer name to this many bytes (NAMEDATALEN - 1). */
const MAX_NAME_BYTES = 63;
/** Leading comments and blank lines of a statement as the splitter gives it. */
const LEADING_COMMENTS = /^(\s*(--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/))*\s*/;
const CONCURRENT_INDEX = /^create\s+(unique\s+)?index\s+concurrently\s+(if\s+not\s+exists\s+)?("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)?/i;
/** Comments inside a statement, left out where its head is matched (not where it runs). */
const INNER_COMMENTS = /\/\*[\s\S]*?\*\/|--[^\n]*/g;
const CONCURRENTLY = /^((create\s+(unique\s+)?index|drop\s+index|reindex\s+(index|table))\s+)concurrently\s+/i;

export interface MigrationStatement {
  /** The statement, its leading comments left out. */
  sql: string;
  /** Run again until it changes no row (a batch of a large rewrite). */
  repeat: boolean;
  /** The index a concurrent build creates: an invalid one of that name is dropped before it runs. */
  concurrentIndex?: string;
}

/** PostgreSQL's name for an identifier as written: quoted kept (its "" one "), unquoted folded to lower case. */
function identifierName(written: string): string {
  return written.startsWith('"') ? written.slice(1, -1).replace(/""/g, '"') : written.toLowerCase();
}

/**
 * Throws when a file that does not start with `--! no-transaction` has a marker: a header comment
 * before it, or a misspelling, would run the file in one transaction and a batch only once.
 */
export function checkMarkers(file: string, sql: string): void {
  if (!NO_TRANSACTION.test(sql) && ANY_MARKER.test(sql)) {
    throw new Error(`Migration ${file}: a --! marker in a file whose first line is not exactly "--! no-transaction"`);
  }
}

/** The statements of a `--! no-transaction` migration; throws naming what is wrong with one. */
export function splitStatements(file: string, sql: string): MigrationStatement[] {
  // A misspelt marker would be a comment: a batch run once and recorded done.
  for (const [line] of sql.matchAll(MARKER_LINES)) {
    const known = line.trimEnd() === '--! no-transaction' || line.trimEnd() === '--! repeat until no rows';
    if (!known) throw new Error(`Migration ${file}: "${line.trim()}" is not a marker this runner knows ("--! no-transaction" on the first line, "--! repeat until no rows" before a batch)`);
  }
  const statements = splitQuery(sql, postgreSplitterOptions)
    .map((raw) => String(raw))
    .map((raw) => {
      const head = LEADING_COMMENTS.exec(raw)![0];
      const text = raw.slice(head.length).trim();
      const index = CONCURRENT_INDEX.exec(text.replace(INNER_COMMENTS, ' ').replace(/\s+/g, ' '));
      if (index && (!index[2] || !index[3])) throw new Error(`Migration ${file}: "${text.slice(0, 60)}…" must name its index and say IF NOT EXISTS (a migration outside a transaction runs again from its start after a failure)`);
      const concurrentIndex = index ? identifierName(index[3]!) : undefined;
      if (concurrentIndex !== undefined && Buffer.byteLength(concurrentIndex) > MAX_NAME_BYTES) {
        throw new Error(`Migration ${file}: the index name ${concurrentIndex} is longer than PostgreSQL keeps (${MAX_NAME_BYTES} bytes)`);
      }
      return { sql: text, repeat: REPEAT.test(head), concurrentIndex };
    })
    .filter((statement) => statement.sql.length > 0);
  for (const statement of statements) {
    // An UPDATE's or DELETE's count is of the rows it changed; a WITH ... SELECT counts what it returns, never 0.
    if (statement.repeat && !/^(update|delete)\b/i.test(statement.sql)) throw new Error(`Migration ${file}: "--! repeat until no rows" marks an UPDATE or DELETE, not "${statement.sql.slice(0, 60)}…"`);
  }
  return statements;
}

/**
 * The statement as it runs inside a transaction (move-to-postgres builds an empty database in one):
 * CONCURRENTLY left out, which a transaction refuses and an empty table does not need.
 */
export function inTransactionForm(statement: MigrationStatement): string {
  const bare = statement.sql.replace(INNER_COMMENTS, ' ').trim();
  return CONCURRENTLY.test(bare) ? bare.replace(CONCURRENTLY, '$1') : statement.sql;
}
