// The operator CLI as operators run it: the built dist/src/cli.js in a child process (`npm run
// build` first), on the embedded store in one data folder, or on PostgreSQL when TEST_DATABASE_URL
// is set. The tests share one folder (migrated already: prepareDataDir) and run in order.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnvironmentName } from '../src/config.js';
import { DEMO_ADMIN_HISTORY } from '../src/demo/seed-admin.js';
import { openPglite } from '../src/platform/db/pglite.js';
import type { Db } from '../src/platform/db/types.js';
import { createTestDatabase, databaseEnv, onPostgres, prepareDataDir, storeName, type TestDatabase } from './helpers/stores.js';
import { NODE_FLAGS } from './helpers/service-process.js';

const CLI = join(import.meta.dirname, '../dist/src/cli.js');
const ROOT_ID = '123456789012345678';
const TRAINEE_ID = '100000000000000004';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let dataDir: string;
const pg: Partial<Record<EnvironmentName, TestDatabase>> = {};
beforeAll(async () => {
  dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-cli-')));
  if (onPostgres) [pg.production, pg.demo] = await Promise.all([createTestDatabase({ empty: true }), createTestDatabase({ empty: true })]);
});
afterAll(async () => {
  await Promise.all(Object.values(pg).map((d) => d.drop()));
  await rm(dataDir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI on the store under test (`embedded: true` forces the data folder). */
function cli(args: string[], { embedded = false } = {}): Promise<Run> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', DATA_DIR: dataDir };
  if (onPostgres && !embedded) Object.assign(env, databaseEnv('PRODUCTION', pg.production!), databaseEnv('DEMO', pg.demo!));
  // cwd: the temporary folder, so no .env of the working copy is read.
  return new Promise((resolve) => {
    execFile(process.execPath, [...NODE_FLAGS, CLI, ...args], { env, cwd: dataDir }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Looks at an environment's database between CLI runs (the embedded folder is free by then). */
async function inspect<T>(env: EnvironmentName, fn: (db: Db) => Promise<T>): Promise<T> {
  if (onPostgres) return fn(pg[env]!.db);
  const db = await openPglite({ dataDir: join(dataDir, env) });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const agentSql = `select chat_id, name, status, agent_rank, clearance_level, agent_id from agents where chat_id = $1::text`;
async function state(db: Db, chatId: string) {
  const agent = (await db.query(agentSql, [chatId])).rows[0];
  const allowlist = (await db.query('select active, granted_by from admin_allowlist where chat_id = $1::text', [chatId])).rows[0];
  const audit = (await db.query<Record<string, unknown>>(
    'select actor_kind, actor_chat_id, action, target, reason, before, after, correlation_id from audit_log where target = $1::text order by id',
    [chatId],
  )).rows;
  return { agent, allowlist, audit };
}

// Each run is a process that opens both environments cold (seconds each on PGlite, and many more
// on a loaded machine); these tests make several runs in a row.
const COLD_STARTS_MS = 120_000;

describe(`npm run cli -- bootstrap / seed-demo on ${storeName}`, () => {
  it('bootstrap creates an active Director, clearance 5, on the active allowlist; a second run changes nothing', async () => {
    const first = await cli(['bootstrap', '--env', 'production', '--chat-id', ROOT_ID, '--name', 'Ada Root']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toContain(`production: ${ROOT_ID} (Ada Root): created the agent as an active Director, clearance 5`);
    expect(first.stdout).toContain('granted active admin allowlist access');

    const second = await cli(['bootstrap', '--env', 'production', '--chat-id', ROOT_ID, '--name', 'Ada Root']);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(
      `production: ${ROOT_ID} (Ada Root) is already an active Director, clearance 5, on the active admin allowlist; nothing changed\n`,
    );

    const { agent, allowlist, audit } = await inspect('production', (db) => state(db, ROOT_ID));
    expect(agent).toEqual({ chat_id: ROOT_ID, name: 'Ada Root', status: 'active', agent_rank: 'Director', clearance_level: 5, agent_id: null });
    expect(allowlist).toEqual({ active: true, granted_by: 'operator' });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor_kind: 'operator', actor_chat_id: null, action: 'agent.bootstrapped', target: ROOT_ID, before: null });
    expect(audit[0]!.after).toMatchObject({ chat_id: ROOT_ID, agent_rank: 'Director', clearance_level: 5, status: 'active' });
    expect(audit[0]!.correlation_id).toMatch(UUID);
    expect(audit[0]!.reason).toMatch(/created the agent.*granted active admin allowlist access/);
  }, COLD_STARTS_MS);

  it('seed-demo seeds the demo database; bootstrap promotes an onboarding agent; seed-demo again resets it', async () => {
    const seeded = await cli(['seed-demo']);
    expect(seeded).toMatchObject({ code: 0, stderr: '' });
    expect(seeded.stdout).toMatch(/^demo: reset and seeded: 13 agents, 4 admin_allowlist, 10 reports, 4 report_notes, 5 report_evidence, 18 report_timeline, 2 contact_threads, 4 contact_messages, 20 chat_profiles, 7 report_actions, 8 punishments, 11 discipline_deliveries, 8 audit_log, 3 health_incidents, 3 training_scenarios$/m);
    const before = await inspect('demo', (db) => state(db, TRAINEE_ID));
    expect(before).toMatchObject({ agent: { status: 'onboarding', clearance_level: 1 }, allowlist: undefined, audit: [] });

    const promoted = await cli(['bootstrap', '--env', 'demo', '--chat-id', TRAINEE_ID, '--name', 'Sam Okafor']);
    expect(promoted.code).toBe(0);
    expect(promoted.stdout).toContain(
      `demo: ${TRAINEE_ID} (Sam Okafor): promoted the agent (status onboarding -> active, agent_rank Agent -> Director, clearance_level 1 -> 5)`,
    );
    const after = await inspect('demo', async (db) => ({ ...(await state(db, TRAINEE_ID)), agents: (await db.query('select 1 from agents')).rowCount }));
    expect(after.agent).toEqual({ chat_id: TRAINEE_ID, name: 'Sam Okafor', status: 'active', agent_rank: 'Director', clearance_level: 5, agent_id: null });
    expect(after.allowlist).toEqual({ active: true, granted_by: 'operator' });
    expect(after.agents).toBe(13);
    expect(after.audit).toHaveLength(1);
    expect(after.audit[0]).toMatchObject({ action: 'agent.bootstrapped', before: { status: 'onboarding', agent_rank: 'Agent', clearance_level: 1 } });
    expect(after.audit[0]!.after).toMatchObject({ status: 'active', agent_rank: 'Director', clearance_level: 5 });

    const reseeded = await cli(['seed-demo']);
    expect(reseeded.code).toBe(0);
    const reset = await inspect('demo', async (db) => ({
      ...(await state(db, TRAINEE_ID)),
      bootstrap_rows: (await db.query("select 1 from audit_log where action = 'agent.bootstrapped'")).rowCount,
      audit_rows: (await db.query('select 1 from audit_log')).rowCount,
    }));
    // The bootstrap's row went with the reset; what remains is the seeded admin history.
    expect(reset).toMatchObject({ agent: { status: 'onboarding', agent_rank: 'Agent', clearance_level: 1 }, allowlist: undefined, bootstrap_rows: 0, audit_rows: DEMO_ADMIN_HISTORY.length });
  }, COLD_STARTS_MS);

  it.each([
    [['bootstrap', '--chat-id', '1', '--name', 'A'], '--env is required: one of production, demo'],
    [['bootstrap', '--env', 'staging', '--chat-id', '1', '--name', 'A'], '--env must be one of production, demo (got "staging")'],
    [['bootstrap', '--env', 'production', '--name', 'A'], '--chat-id is required: 1 to 20 digits'],
    [['bootstrap', '--env', 'production', '--chat-id', '12ab', '--name', 'A'], '--chat-id is required: 1 to 20 digits'],
    [['bootstrap', '--env', 'production', '--chat-id', '1'.repeat(21), '--name', 'A'], '--chat-id is required: 1 to 20 digits'],
    [['bootstrap', '--env', 'production', '--chat-id', '1', '--name', '  '], '--name is required: 1 to 100 characters'],
    [['bootstrap', '--env', 'production', '--chat-id', '1', '--name', 'n'.repeat(101)], '--name is required: 1 to 100 characters'],
    [['bootstrap', '--env', 'production', '--chat-id', '1', '--name', 'A', '--force'], "Unknown option '--force'"],
    [['seed-demo', '--env', 'production'], "Unknown option '--env'"],
    [['frobnicate'], 'Unknown command: frobnicate'],
  ])('%j: exit 2 with "%s" and the usage', async (args, message) => {
    const run = await cli(args);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toContain(message);
    expect(run.stderr).toContain('Usage: npm run cli -- <command> [options]');
  });

  // Embedded only: on PostgreSQL the CLI runs beside the service by design.
  it.skipIf(onPostgres)('while another process holds the embedded folder: exit 1 with the lock message, nothing written', async () => {
    const folder = join(dataDir, 'production');
    const held = await openPglite({ dataDir: folder });
    try {
      const snapshot = async () =>
        (await held.query('select (select count(*) from agents) as agents, (select count(*) from audit_log) as audit')).rows;
      const before = await snapshot();
      expect(before).toEqual([{ agents: 1, audit: 1 }]); // the first test's Director
      const run = await cli(['bootstrap', '--env', 'production', '--chat-id', '222222222222222222', '--name', 'Locked Out'], { embedded: true });
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toContain(`The embedded data folder ${folder} is in use by process ${process.pid} (is the service running?)`);
      expect(await snapshot()).toEqual(before);
    } finally {
      await held.close();
    }
  });
});
