// The training scenario file (issue 11, DESIGN.md "Training scenarios"): checked whole, every fault
// with its path; and `npm run cli -- import-scenarios` writing it by slug, or nothing at all.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SCENARIOS } from '../src/demo/seed-scenarios.js';
import { openPglite } from '../src/platform/db/pglite.js';
import type { Db } from '../src/platform/db/types.js';
import { checkScenarioFile } from '../src/training/scenario-file.js';
import { createTestDatabase, databaseEnv, onPostgres, prepareDataDir, type TestDatabase } from './helpers/stores.js';
import { NODE_FLAGS } from './helpers/service-process.js';

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

describe('checking a scenario file', () => {
  it('accepts the demo scenarios', () => {
    expect(checkScenarioFile(DEMO_SCENARIOS)).toEqual({ ok: true, scenarios: DEMO_SCENARIOS });
  });

  it('reports every broken reference with its path', () => {
    const file = clone(DEMO_SCENARIOS) as any[];
    file[1].definition.objectives[0].complete_when.target = 'x';
    file[0].definition.evidence[1].unlock_when.objective = 'nowhere';
    file[0].definition.objectives[2].id = 'read-log';
    file[0].definition.evidence[1].key = 'chat-log';
    file[2].slug = 'first-response';
    expect(checkScenarioFile(file)).toEqual({
      ok: false,
      problems: [
        '[0].definition.objectives[2].id: "read-log" is not unique',
        '[0].definition.evidence[1].key: "chat-log" is not unique',
        '[0].definition.evidence[1].unlock_when.objective: no objective "nowhere"',
        '[1].definition.objectives[0].complete_when.target: no evidence "x"',
        '[2].slug: "first-response" is already used by [0]',
      ],
    });
  });

  it('reports every shape fault with its path', () => {
    const file = clone(DEMO_SCENARIOS) as any[];
    delete file[0].title;
    file[0].published = 'yes';
    file[1].definition.objectives[1].complete_when.type = 'DANCE';
    file[1].definition.evidence[0].colour = 'red';
    file[2].definition.briefing = '   ';
    const check = checkScenarioFile(file);
    expect(check.ok).toBe(false);
    expect(!check.ok && check.problems).toEqual([
      '[0].title: is required',
      '[0].published: must be boolean',
      '[1].definition.objectives[1].complete_when.type: must be one of OPEN_EVIDENCE, ADD_FINDING, CONTACT_PARTY, SUBMIT_DECISION',
      '[1].definition.evidence[0].colour: is not an accepted field',
      '[2].definition.briefing: must not be blank',
    ]);
    expect(checkScenarioFile({})).toEqual({ ok: false, problems: ['(file): must be array'] });
    expect(checkScenarioFile([])).toEqual({ ok: false, problems: ['(file): must NOT have fewer than 1 items'] });
  });

  it('needs a target for OPEN_EVIDENCE', () => {
    const file = clone(DEMO_SCENARIOS.slice(0, 1)) as any[];
    delete file[0].definition.objectives[0].complete_when.target;
    expect(checkScenarioFile(file)).toEqual({ ok: false, problems: ['[0].definition.objectives[0].complete_when.target: is required for OPEN_EVIDENCE'] });
  });
});

describe('npm run cli -- import-scenarios', () => {
  const CLI = join(import.meta.dirname, '../dist/src/cli.js');
  let dir: string;
  let database: TestDatabase | undefined;

  beforeAll(async () => {
    dir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-scenarios-')));
    if (onPostgres) database = await createTestDatabase({ empty: true });
  });
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const run = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const env: Record<string, string> = { PATH: process.env.PATH ?? '', DATA_DIR: dir };
      if (database) Object.assign(env, databaseEnv('PRODUCTION', database));
      execFile(process.execPath, [...NODE_FLAGS, CLI, ...args], { env, cwd: dir }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  async function rows(): Promise<{ slug: string; title: string; published: boolean }[]> {
    const db: Db = database ? database.db : await openPglite({ dataDir: join(dir, 'production') });
    try {
      return (await db.query<{ slug: string; title: string; published: boolean }>('select slug, title, published from training_scenarios order by slug')).rows;
    } finally {
      if (!database) await db.close();
    }
  }
  const file = async (name: string, content: unknown) => {
    const path = join(dir, name);
    await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it('creates the scenarios, then updates only what changed', async () => {
    const path = await file('scenarios.json', DEMO_SCENARIOS);
    const first = await run(['import-scenarios', path, '--env', 'production']);
    expect(first).toMatchObject({ code: 0, stderr: '', stdout: 'production: created 3: first-response, ban-evasion, appeal-review\n' });
    expect(await rows()).toEqual([
      { slug: 'appeal-review', title: 'Reviewing an appeal (draft)', published: false },
      { slug: 'ban-evasion', title: 'Ban evasion with an alternate account', published: true },
      { slug: 'first-response', title: 'First response: a harassment report', published: true },
    ]);
    const changed = clone(DEMO_SCENARIOS) as any[];
    changed[2].published = true;
    const second = await run(['import-scenarios', await file('changed.json', changed), '--env', 'production']);
    expect(second).toMatchObject({ code: 0, stdout: 'production: updated 1: appeal-review\nproduction: unchanged 2: first-response, ban-evasion\n' });
    expect((await rows())[0]).toEqual({ slug: 'appeal-review', title: 'Reviewing an appeal (draft)', published: true });
  });

  it('refuses a faulty file with exit 1, every fault named, nothing written', async () => {
    const before = await rows();
    const broken = clone(DEMO_SCENARIOS) as any[];
    broken[0].title = 'Renamed';
    broken[1].definition.objectives[0].complete_when.target = 'x';
    const refused = await run(['import-scenarios', await file('broken.json', broken), '--env', 'production']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('has 1 problem; nothing was written');
    expect(refused.stderr).toContain('[1].definition.objectives[0].complete_when.target: no evidence "x"');
    const notJson = await run(['import-scenarios', await file('bad.json', '[{'), '--env', 'production']);
    expect(notJson.code).toBe(1);
    expect(notJson.stderr).toContain('nothing was written');
    expect(await rows()).toEqual(before);
  });

  it.each([
    [['import-scenarios', '--env', 'production'], 'expected exactly one scenario file'],
    [['import-scenarios', 'a.json'], '--env is required: one of production, demo'],
    [['import-scenarios', 'a.json', 'b.json', '--env', 'demo'], 'expected exactly one scenario file'],
  ])('%j: exit 2 with "%s"', async (args, message) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });
});
