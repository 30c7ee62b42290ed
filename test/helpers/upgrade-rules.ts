// The upgrade rule (issue 30, docs/decisions.md): a release's migrations leave the schema usable by
// the release before, which keeps serving while the new one rolls out. Add, never drop or rename
// in the release whose code stops using it. This reads a migration's SQL and names each statement
// that can break the release before; a file may waive a rule with a line
//   -- upgrade-safe <rule>: <why the release before still works>
// The run against the release before itself (scripts/upgrade-check.ts) catches what text cannot.

/** Migrations from this number on follow the rule; 0001 to 0024 predate it. */
export const RULE_FROM_VERSION = 25;
/**
 * Migrations from this number on build an index on an existing table CONCURRENTLY (issue 40,
 * 'blocking-index'); 0027 built 17 in its transaction, each stopping its table's writes.
 */
export const CONCURRENT_INDEX_FROM_VERSION = 35;

export type RuleName =
  | 'drop-table' | 'drop-view' | 'drop-function' | 'drop-object' | 'drop-index' | 'drop-trigger'
  | 'drop-column' | 'drop-constraint' | 'drop-default' | 'rename' | 'alter-type' | 'set-not-null'
  | 'not-null-column' | 'add-constraint' | 'unique-index' | 'blocking-index';

/** What each rule refuses, and why the release before breaks on it. */
export const RULES: Record<RuleName, string> = {
  'drop-table': 'the release before still reads and writes it',
  'drop-view': 'the release before may still read it',
  'drop-function': 'the release before, or its triggers, may still call it',
  'drop-object': 'a type, domain, sequence, schema or extension the release before may still use',
  'drop-index': "a unique index: it keeps the release before's rows unique, and its `on conflict` may name it",
  'drop-trigger': 'the release before relies on what it keeps (counters, flags, notifications); replacing it in the same file is fine',
  'drop-column': 'the release before still reads or writes it',
  'drop-constraint': "a unique constraint the release before's `on conflict` names",
  'drop-default': 'the release before inserts without that column',
  rename: 'the release before still uses the old name',
  'alter-type': 'the release before sends and reads the old type',
  'set-not-null': 'the release before may insert without it',
  'not-null-column': 'the release before inserts without the new column (give it a default, or fill it by trigger and waive)',
  'add-constraint': 'the release before writes rows without knowing it (a check, foreign key, unique or exclusion constraint on an existing table)',
  'unique-index': 'the release before writes rows without knowing it',
  'blocking-index':
    'a plain CREATE INDEX on an existing table stops its writes until the build ends (seconds on a large table): build it with CREATE INDEX CONCURRENTLY IF NOT EXISTS in a `--! no-transaction` migration',
};

export interface Finding {
  rule: RuleName;
  statement: string;
}

/** Comments removed, string and dollar-quoted literals emptied (function bodies are not statements of the migration). */
function stripLiterals(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const rest = sql.slice(i);
    if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end;
    } else if (rest.startsWith('/*')) {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
      out += ' ';
    } else if (sql[i] === "'") {
      let j = i + 1;
      while (j < sql.length && !(sql[j] === "'" && sql[j + 1] !== "'")) j += sql[j] === "'" ? 2 : 1;
      out += "''";
      i = j + 1;
    } else if (/^\$[a-z_]*\$/i.test(rest)) {
      const tag = /^\$[a-z_]*\$/i.exec(rest)![0];
      const end = sql.indexOf(tag, i + tag.length);
      out += "''";
      i = end < 0 ? sql.length : end + tag.length;
    } else {
      out += sql[i];
      i++;
    }
  }
  return out;
}

/** The statements, lower-cased, whitespace collapsed, literals emptied. */
export function statements(sql: string): string[] {
  return stripLiterals(sql)
    .split(';')
    .map((s) => s.replace(/\s+/g, ' ').trim().toLowerCase())
    .filter((s) => s.length > 0);
}

/** Splits `a, b (c, d), e` at the commas outside parentheses. */
function topLevelParts(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

const NAME = String.raw`(?:[a-z_][a-z0-9_]*\.)?"?([a-z_][a-z0-9_]*)"?`;
const ALTER_TABLE = new RegExp(String.raw`^alter table (?:if exists )?(?:only )?${NAME} (.*)$`);

function alterTableFindings(actions: string): RuleName[] {
  const found: RuleName[] = [];
  for (const action of topLevelParts(actions)) {
    if (/^rename\b/.test(action)) found.push('rename');
    else if (/^drop constraint\b/.test(action)) found.push('drop-constraint');
    else if (/^drop (column )?(?!constraint\b)/.test(action)) found.push('drop-column');
    else if (/^alter (column )?\S+ (set data )?type\b/.test(action)) found.push('alter-type');
    else if (/^alter (column )?\S+ drop default\b/.test(action)) found.push('drop-default');
    else if (/^alter (column )?\S+ set not null\b/.test(action)) found.push('set-not-null');
    else if (/^add (constraint \S+ )?(check|foreign key|unique|exclude|primary key)\b/.test(action)) found.push('add-constraint');
    else if (/^add (column )?(?!constraint\b)/.test(action) && /\bnot null\b/.test(action) && !/\b(default|generated)\b/.test(action)) {
      found.push('not-null-column');
    }
  }
  return found;
}

/** The unique indexes the earlier migrations create, by name (`drop index` of another one is safe). */
export function uniqueIndexNames(earlierSql: string[]): Set<string> {
  const names = earlierSql.flatMap((sql) =>
    statements(sql).flatMap((s) => /^create unique index (?:concurrently )?(?:if not exists )?"?([a-z_][a-z0-9_]*)"? on\b/.exec(s)?.[1] ?? []),
  );
  return new Set(names);
}

/**
 * Each statement of `sql` that can break the release before, with the rule it breaks.
 * `uniqueIndexes`: the unique indexes that exist before it (uniqueIndexNames); without it every
 * dropped index counts as one.
 */
export function findBreakingStatements(sql: string, uniqueIndexes?: Set<string>): Finding[] {
  const all = statements(sql);
  const created = new Set(all.flatMap((s) => new RegExp(String.raw`^create (?:unlogged )?table (?:if not exists )?${NAME}`).exec(s)?.[1] ?? []));
  const triggersCreated = new Set(
    all.flatMap((s) => {
      const m = new RegExp(String.raw`^create (?:or replace )?(?:constraint )?trigger "?([a-z_][a-z0-9_]*)"? .* on ${NAME}`).exec(s);
      return m ? [`${m[1]} on ${m[2]}`] : [];
    }),
  );
  const findings: Finding[] = [];
  const add = (rule: RuleName, statement: string) => findings.push({ rule, statement });
  for (const s of all) {
    const alter = ALTER_TABLE.exec(s);
    if (alter) {
      // A table this very file creates has no rows and no code of the release before using it.
      if (!created.has(alter[1]!)) for (const rule of alterTableFindings(alter[2]!)) add(rule, s);
      continue;
    }
    const trigger = new RegExp(String.raw`^drop trigger (?:if exists )?"?([a-z_][a-z0-9_]*)"? on ${NAME}`).exec(s);
    if (trigger) {
      if (!triggersCreated.has(`${trigger[1]} on ${trigger[2]}`)) add('drop-trigger', s);
    } else if (/^drop table\b/.test(s)) add('drop-table', s);
    else if (/^drop (materialized )?view\b/.test(s)) add('drop-view', s);
    else if (/^drop (function|procedure|routine)\b/.test(s)) add('drop-function', s);
    else if (/^drop index\b/.test(s)) {
      const names = s.replace(/^drop index (concurrently )?(if exists )?/, '').replace(/ (cascade|restrict)$/, '').split(',');
      const bare = names.map((n) => n.trim().replace(/^[a-z_][a-z0-9_]*\./, '').replace(/"/g, ''));
      if (uniqueIndexes === undefined || bare.some((n) => uniqueIndexes.has(n))) add('drop-index', s);
    }
    else if (/^drop (type|domain|sequence|schema|extension|aggregate|operator)\b/.test(s)) add('drop-object', s);
    else if (/^alter \S+( \S+)? .*\brename\b/.test(s)) add('rename', s);
    else {
      const unique = new RegExp(String.raw`^create unique index (?:concurrently )?(?:if not exists )?(?:"[^"]*" |\S+ )?on (?:only )?${NAME}`).exec(s);
      if (unique && !created.has(unique[1]!)) add('unique-index', s);
      const plain = new RegExp(String.raw`^create (?:unique )?index (?!concurrently )(?:if not exists )?(?:"[^"]*" |\S+ )?on (?:only )?${NAME}`).exec(s);
      if (plain && !created.has(plain[1]!)) add('blocking-index', s);
    }
  }
  return findings;
}

/** The rules a file waives, each with its reason: `-- upgrade-safe <rule>: <why>`. */
export function waivers(sql: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of sql.matchAll(/^--[ \t]*upgrade-safe[ \t]+([a-z-]+):[ \t]*(.*)$/gm)) found.set(m[1]!, m[2]!.trim());
  return found;
}

/**
 * What stays refused once the file's waivers are applied; a waiver needs a reason of a few words.
 * `version`: the migration's number ('blocking-index' holds from CONCURRENT_INDEX_FROM_VERSION on).
 */
export function unwaivedFindings(sql: string, uniqueIndexes?: Set<string>, version = Infinity): Finding[] {
  const waived = waivers(sql);
  return findBreakingStatements(sql, uniqueIndexes)
    .filter((f) => f.rule !== 'blocking-index' || version >= CONCURRENT_INDEX_FROM_VERSION)
    .filter((f) => (waived.get(f.rule)?.split(/\s+/).length ?? 0) < 4);
}
