// `npm run cli -- subject-export` and `subject-erase` (issue 32) as operators run them: the built
// dist/src/cli.js in a child process (`npm run build` first), on the embedded store in a data
// folder of its own, or on PostgreSQL when TEST_DATABASE_URL is set. The export file is the
// document GET /admin/subjects/<id> answers; both commands leave an audit row by the operator.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../src/platform/db/migrate.js';
import { openPglite } from '../src/platform/db/pglite.js';
import type { Db } from '../src/platform/db/types.js';
import { createTestDatabase, databaseEnv, onPostgres, prepareDataDir, storeName, type TestDatabase } from './helpers/stores.js';
import { plantSubject, type Planted } from './helpers/subjects.js';
import { NODE_FLAGS } from './helpers/service-process.js';

const CLI = join(import.meta.dirname, '../dist/src/cli.js');
const PERSON = '400000000000000001';
const HELD = '400000000000000002';
const STAFF = { chat_id: '400000000000000003', name: 'Sam Staff' };
const COLD_STARTS_MS = 120_000;

let dataDir: string;
let pg: TestDatabase | undefined;
let planted: Planted;

/** On PostgreSQL the operator sets the environment's pseudonym key (embedded: a file beside the data folder). */
const PSEUDONYM_KEY = 'cli-subjects-test-pseudonym-key-0123456789';

function cli(args: string[], { withKey = true } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', DATA_DIR: dataDir };
  if (pg) Object.assign(env, databaseEnv('PRODUCTION', pg), withKey ? { PRODUCTION_PSEUDONYM_KEY: PSEUDONYM_KEY } : {});
  return new Promise((resolve) => {
    execFile(process.execPath, [...NODE_FLAGS, CLI, ...args], { env, cwd: dataDir }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function inspect<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  if (pg) return fn(pg.db);
  const db = await openPglite({ dataDir: join(dataDir, 'production') });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

beforeAll(async () => {
  dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-cli-subjects-')));
  if (onPostgres) pg = await createTestDatabase({ empty: true });
  planted = await inspect(async (db) => {
    await migrate(db);
    await db.query(`insert into agents (chat_id, name, status, agent_rank, clearance_level) values ($1::text, $2::text, 'active', 'Supervisor', 3)`, [STAFF.chat_id, STAFF.name]);
    await db.query(`insert into punishments (punishment_id, user_id, reason, status) values ('HH1HH1', $1::text, 'Spam', 'Active')`, [HELD]);
    return plantSubject(db, PERSON, STAFF, '400000000000000004');
  });
}, COLD_STARTS_MS);
afterAll(async () => {
  await pg?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe(`npm run cli -- subject-export / subject-erase on ${storeName}`, () => {
  it('exports to a file, erases, and refuses a person under a punishment in force', async () => {
    const out = join(dataDir, 'subject.json');
    const exported = await cli(['subject-export', '--env', 'production', '--chat-id', PERSON, '--out', out]);
    expect(exported).toMatchObject({ code: 0, stderr: '' });
    const doc = JSON.parse(await readFile(out, 'utf8'));
    expect(doc).toMatchObject({ success: true, chat_id: PERSON, total: Object.values(planted.expected).flat().length });
    expect(doc.kinds.reports_as_reporter.map((r: { id: string }) => r.id)).toEqual(planted.expected.reports_as_reporter);
    expect(exported.stdout).toBe(`production: ${doc.total} rows about ${PERSON} written to ${out} (audited as admin.subject_exported, ${doc.correlation_id})\n`);

    if (pg) {
      const unkeyed = await cli(['subject-erase', '--env', 'production', '--chat-id', PERSON, '--reason', 'x', '--reference', 'y'], { withKey: false });
      expect(unkeyed).toEqual({ code: 1, stdout: '', stderr: 'subject-erase: PRODUCTION_PSEUDONYM_KEY is not configured (NOT_CONFIGURED); nothing was written\n' });
    }
    const erased = await cli(['subject-erase', '--env', 'production', '--chat-id', PERSON, '--reason', `Email from ${PERSON}`, '--reference', 'GDPR-2026-009']);
    expect(erased).toMatchObject({ code: 0, stderr: '' });
    expect(erased.stdout).toMatch(new RegExp(`^production: erased ${PERSON} as 0\\d{19} under reference GDPR-2026-009: .*2 reports.*\\(erasure \\d+\\)\\n$`));
    const again = await cli(['subject-erase', '--env', 'production', '--chat-id', PERSON, '--reason', 'Again', '--reference', 'GDPR-2026-010']);
    expect(again).toMatchObject({ code: 0, stdout: expect.stringContaining('nothing changed') });

    const refused = await cli(['subject-erase', '--env', 'production', '--chat-id', HELD, '--reason', 'Asked', '--reference', 'GDPR-2026-011']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(PUNISHMENT_IN_FORCE); nothing was written');

    const usage = await cli(['subject-erase', '--env', 'production', '--chat-id', 'abc', '--reason', 'x', '--reference', 'y']);
    expect(usage.code).toBe(2);

    const audit = await inspect(async (db) => (await db.query<Record<string, unknown>>(
      "select actor_kind, actor_chat_id, action, target, reason from audit_log where action like 'admin.subject_%' order by id")).rows);
    const pseudonym = (audit[1]!.target as string);
    expect(audit).toEqual([
      { actor_kind: 'operator', actor_chat_id: null, action: 'admin.subject_exported', target: expect.stringMatching(/^0\d{19}$/), reason: expect.any(String) },
      { actor_kind: 'operator', actor_chat_id: null, action: 'admin.subject_erased', target: pseudonym, reason: `Email from ${pseudonym}` },
    ]);
    const events = await inspect(async (db) => (await db.query("select actor_kind from events where type like 'admin.subject_%'")).rows);
    expect(events).toEqual([{ actor_kind: 'system' }, { actor_kind: 'system' }]);
  }, COLD_STARTS_MS * 3);
});
