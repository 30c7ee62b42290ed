// Issue 30, upgrades without downtime: a release's migrations leave the schema usable by the
// release before (docs/decisions.md). Every migration from 0025 on is read statement by statement
// (test/helpers/upgrade-rules.ts); a statement that can break the release before fails this test
// unless its file waives that rule with `-- upgrade-safe <rule>: <why>`. What the text cannot show
// (a constraint the old code's writes violate even so) the run against the release before itself
// catches: scripts/upgrade-check.ts, in .ci/run.
import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../src/platform/db/migrate.js';
import { CONCURRENT_INDEX_FROM_VERSION, findBreakingStatements, RULE_FROM_VERSION, RULES, uniqueIndexNames, unwaivedFindings, waivers, type RuleName } from './helpers/upgrade-rules.js';

// The unique indexes earlier migrations made: dropping one of them breaks the release before.
const UNIQUE = uniqueIndexNames(['create unique index reports_page_idx on reports (creation_order)']);
const rulesOf = (sql: string) => findBreakingStatements(sql, UNIQUE).map((f) => f.rule);
const fileName = (m: { version: number; name: string }) => `${String(m.version).padStart(4, '0')}_${m.name}.sql`;

describe('the rule, statement by statement', () => {
  const breaking: [RuleName, string][] = [
    ['drop-table', 'drop table if exists oauth_states'],
    ['drop-view', 'drop materialized view report_totals'],
    ['drop-function', 'drop function report_flagged(text)'],
    ['drop-object', 'drop type report_status'],
    ['drop-index', 'drop index reports_page_idx'],
    ['drop-trigger', 'drop trigger reports_counts on reports'],
    ['drop-column', 'alter table reports drop column notes'],
    ['drop-column', 'alter table reports add column x text, drop notes'],
    ['drop-constraint', 'alter table reports drop constraint reports_life_key'],
    ['drop-default', 'alter table reports alter column status drop default'],
    ['rename', 'alter table reports rename column notes to body'],
    ['rename', 'alter table reports rename to dockets'],
    ['rename', 'alter function report_flagged(text) rename to flagged'],
    ['alter-type', 'alter table reports alter column reason type varchar(100)'],
    ['alter-type', 'alter table reports alter reason set data type varchar(100)'],
    ['set-not-null', 'alter table report_timeline alter column report_life set not null'],
    ['not-null-column', 'alter table report_timeline add column report_life bigint not null'],
    ['add-constraint', 'alter table report_timeline add constraint belongs check (report_life is not null) not valid'],
    ['add-constraint', 'alter table t add constraint t_fkey foreign key (a, b) references reports (report_id, creation_order) on delete set null (b)'],
    ['add-constraint', 'alter table reports add constraint reports_life_key unique (report_id, creation_order)'],
    ['add-constraint', 'alter table reports add check (length(reason) < 10)'],
    ['unique-index', 'create unique index concurrently if not exists reports_x on reports (reporter)'],
    ['blocking-index', 'create index reports_x on reports (reporter)'],
    ['blocking-index', 'create index if not exists on only reports (reporter)'],
    ['blocking-index', 'create index "my idx" on reports (reporter)'],
  ];
  it.each(breaking)('%s: %s', (rule, sql) => {
    expect(rulesOf(`${sql};`)).toEqual([rule]);
  });

  const safe = [
    'create table things (id bigint primary key, name text not null)',
    // A table this very migration creates has no rows and no writers of the release before.
    'create table things (id int); alter table things add column kind text not null',
    'create table if not exists things (id int); alter table things add constraint things_kind check (kind <> \'\')',
    'create table things (id int); alter table things alter column name set not null',
    'create table things (id int); create unique index things_name on things (name)',
    'alter table reports add column report_life bigint',
    'alter table reports add column kind text not null default \'x\'',
    'alter table reports add column n bigint generated always as identity not null',
    'alter table reports add column deleted_report bigint references deleted_reports (id)',
    'alter table reports alter column reason drop not null',
    'alter table reports alter column status set default \'Open\'',
    'create index concurrently if not exists reports_x on reports (reporter)',
    'drop index reports_created_at_idx',
    'create or replace function f() returns trigger language plpgsql as $$ begin drop table x; alter table y drop column z; return new; end $$',
    "insert into settings (k, v) values ('drop table x', 'rename')",
    '-- drop table reports\nselect 1',
    '/* alter table reports drop column notes; */ select 1',
    'drop trigger if exists report_life_fill on report_timeline; create trigger report_life_fill before insert on report_timeline for each row execute function fill()',
    'update report_timeline set report_life = 1',
  ];
  it.each(safe)('allowed: %s', (sql) => {
    expect(rulesOf(`${sql};`)).toEqual([]);
  });

  it('several statements: each finding names its rule and statement', () => {
    const sql = 'alter table a drop column b;\ncreate table c (id int);\nalter table c drop column id;\ndrop table d;';
    expect(findBreakingStatements(sql)).toEqual([
      { rule: 'drop-column', statement: 'alter table a drop column b' },
      { rule: 'drop-table', statement: 'drop table d' },
    ]);
  });

  it('a waiver names its rule and says why in a few words; it waives that rule alone', () => {
    const sql = 'alter table a drop column b;\ndrop table d;\n';
    const waived = `-- upgrade-safe drop-column: b was last used by the release before the previous one\n${sql}`;
    expect(unwaivedFindings(waived)).toEqual([{ rule: 'drop-table', statement: 'drop table d' }]);
    expect(unwaivedFindings(`-- upgrade-safe drop-column: safe\n${sql}`).map((f) => f.rule)).toEqual(['drop-column', 'drop-table']);
    expect(unwaivedFindings(`-- upgrade-safe drop-column:\n${sql}`).map((f) => f.rule)).toEqual(['drop-column', 'drop-table']);
  });
});

describe('the migrations', () => {
  const migrations = loadMigrations();

  it(`every migration from ${String(RULE_FROM_VERSION).padStart(4, '0')} on leaves the schema usable by the release before, or says why in a waiver`, () => {
    const ruled = migrations.filter((m) => m.version >= RULE_FROM_VERSION);
    expect(ruled.length).toBeGreaterThan(0);
    for (const m of ruled) {
      const uniqueBefore = uniqueIndexNames(migrations.filter((earlier) => earlier.version < m.version).map((earlier) => earlier.sql));
      expect([fileName(m), unwaivedFindings(m.sql, uniqueBefore, m.version)]).toEqual([fileName(m), []]);
    }
  });

  it('every waiver names a rule this check knows (a misspelt one would waive nothing)', () => {
    for (const m of migrations) {
      for (const rule of waivers(m.sql).keys()) expect([fileName(m), rule in RULES]).toEqual([fileName(m), true]);
    }
  });

  it('the unique indexes are read from the earlier migrations', () => {
    const unique = uniqueIndexNames(migrations.filter((m) => m.version < RULE_FROM_VERSION).map((m) => m.sql));
    expect(unique.size).toBeGreaterThan(0);
    for (const name of unique) expect(migrations.some((m) => new RegExp(`create unique index (if not exists )?${name} on`, 'i').test(m.sql))).toBe(true);
  });

  it('the migrations before the rule would not all pass it: 0024 dropped a table in the release that stopped using it', () => {
    const m24 = migrations.find((m) => m.version === 24)!;
    expect(findBreakingStatements(m24.sql).map((f) => f.rule)).toContain('drop-table');
  });

  it(`the migrations before ${String(CONCURRENT_INDEX_FROM_VERSION).padStart(4, '0')} would not all pass its index rule: 0027 built 17 indexes on existing tables in its transaction`, () => {
    const m27 = migrations.find((m) => m.version === 27)!;
    expect(findBreakingStatements(m27.sql).filter((f) => f.rule === 'blocking-index')).toHaveLength(17);
    expect(unwaivedFindings(m27.sql, undefined, 27).filter((f) => f.rule === 'blocking-index')).toEqual([]);
    expect(unwaivedFindings(m27.sql, undefined, CONCURRENT_INDEX_FROM_VERSION).filter((f) => f.rule === 'blocking-index')).toHaveLength(17);
  });
});
