// Operator commands: `npm run cli -- <command> [options]`. Exit codes: 0 done, 1 failed (nothing
// written), 2 usage error.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { findAgent, insertAgent, updateAgent, type AgentRow } from './agents/queries.js';
import { AUDIT_COMMANDS, AUDIT_USAGE } from './cli-audit.js';
import { BACKUP_COMMANDS, BACKUP_USAGE } from './cli-backup.js';
import { ENV_OPTION, parseEnvironment, parseOptions, UsageError } from './cli-options.js';
import { SUBJECT_COMMANDS, SUBJECT_USAGE } from './cli-subjects.js';
import { ENVIRONMENTS, loadConfig, type Config, type EnvironmentName } from './config.js';
import { resetDemo, type SeedCounts } from './demo/seed.js';
import { recordAudit } from './platform/audit.js';
import { migrate } from './platform/db/migrate.js';
import type { Db, Tx } from './platform/db/types.js';
import { defaultOpenDb } from './platform/environments.js';
import { checkScenarioFile } from './training/scenario-file.js';
import { upsertScenarios } from './training/scenario-queries.js';

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate [--env production|demo]
      apply pending migrations (both environments by default)
  bootstrap --env production|demo --chat-id <id> --name <name>
      create or promote an active Director (clearance 5) on the active admin allowlist; idempotent
  seed-demo
      reset the demo database to its fictional organisation (deletes every demo record)
  import-scenarios <file> --env production|demo
      check a training scenario file whole, then create or update its scenarios by slug
${BACKUP_USAGE}
${AUDIT_USAGE}
${SUBJECT_USAGE}`;

async function withDb<T>(config: Config, name: EnvironmentName, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await defaultOpenDb(config, pino({ level: 'warn' }))(config.environments[name]);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

async function migrateCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, ENV_OPTION);
  const targets = values.env === undefined ? [...ENVIRONMENTS] : [parseEnvironment(values.env)];
  const config = loadConfig();
  for (const name of targets) {
    const applied = await withDb(config, name, (db) => db.direct(migrate));
    console.log(`${name}: ${applied.length === 0 ? 'up to date' : `applied ${applied.join(', ')}`}`);
  }
  return 0;
}

const DIRECTOR = { status: 'active', agent_rank: 'Director', clearance_level: 5 } as const;

interface BootstrapResult {
  before: AgentRow | undefined;
  after: AgentRow;
  allowlistChanged: boolean;
}

/** Creates or promotes the Director and puts them on the active allowlist; audits only a change. */
async function bootstrapDirector(tx: Tx, chatId: string, name: string): Promise<BootstrapResult> {
  let before = await findAgent(tx, chatId, { forUpdate: true });
  let after: AgentRow | undefined;
  if (before === undefined) {
    after = await insertAgent(tx, { chat_id: chatId, name, ...DIRECTOR });
    // Lost a race with a concurrent insert: promote the row that won.
    if (after === undefined) before = await findAgent(tx, chatId, { forUpdate: true });
  }
  if (before !== undefined) {
    const b = before;
    const current = b.name === name && b.status === DIRECTOR.status && b.agent_rank === DIRECTOR.agent_rank &&
      b.clearance_level === DIRECTOR.clearance_level;
    after = current ? b : await updateAgent(tx, chatId, { name, ...DIRECTOR });
  }
  const { rowCount } = await tx.query(
    `insert into admin_allowlist (chat_id, active, granted_by) values ($1::text, true, 'operator')
     on conflict (chat_id) do update set active = true, granted_by = 'operator', updated_at = now()
     where admin_allowlist.active is not true`,
    [chatId],
  );
  const result = { before, after: after!, allowlistChanged: rowCount > 0 };
  const changes = describeChanges(result);
  if (changes.length > 0) {
    await recordAudit(tx, {
      actor: { kind: 'operator' },
      action: 'agent.bootstrapped',
      target: chatId,
      reason: `Operator bootstrap: ${changes.join('; ')}`,
      before: before ?? null,
      after: result.after,
      correlationId: randomUUID(),
    });
  }
  return result;
}

function describeChanges({ before, after, allowlistChanged }: BootstrapResult): string[] {
  const changes: string[] = [];
  if (before === undefined) changes.push('created the agent as an active Director, clearance 5');
  else if (after !== before) {
    const fields = (['name', 'status', 'agent_rank', 'clearance_level'] as const).filter((f) => before[f] !== after[f]);
    const verb = fields.some((f) => f !== 'name') ? 'promoted' : 'renamed';
    changes.push(`${verb} the agent (${fields.map((f) => `${f} ${String(before[f])} -> ${String(after[f])}`).join(', ')})`);
  }
  if (allowlistChanged) changes.push('granted active admin allowlist access');
  return changes;
}

async function bootstrapCommand(args: string[]): Promise<number> {
  const values = parseOptions(args, { ...ENV_OPTION, 'chat-id': { type: 'string' }, name: { type: 'string' } });
  const env = parseEnvironment(values.env);
  const chatId = (values['chat-id'] as string | undefined)?.trim();
  if (chatId === undefined || !/^\d{1,20}$/.test(chatId)) throw new UsageError('--chat-id is required: 1 to 20 digits');
  const name = (values.name as string | undefined)?.trim();
  if (name === undefined || name === '' || [...name].length > 100) throw new UsageError('--name is required: 1 to 100 characters');

  const config = loadConfig();
  return withDb(config, env, async (db) => {
    await db.direct(migrate);
    const result = await db.transaction((tx) => bootstrapDirector(tx, chatId, name));
    const changes = describeChanges(result);
    if (changes.length === 0) {
      console.log(`${env}: ${chatId} (${name}) is already an active Director, clearance 5, on the active admin allowlist; nothing changed`);
    }
    for (const change of changes) console.log(`${env}: ${chatId} (${name}): ${change}`);
    if (changes.length > 0) console.log(`${env}: recorded audit row agent.bootstrapped for ${chatId}`);
    return 0;
  });
}

async function seedDemoCommand(args: string[]): Promise<number> {
  parseOptions(args, {});
  const config = loadConfig();
  return withDb(config, 'demo', async (db) => {
    const applied = await db.direct(migrate);
    if (applied.length > 0) console.log(`demo: applied migrations ${applied.join(', ')}`);
    const counts: SeedCounts = await db.transaction(resetDemo);
    const summary = Object.entries(counts).map(([table, n]) => `${n} ${table}`).join(', ');
    console.log(`demo: reset and seeded: ${summary}`);
    return 0;
  });
}

/** Reads and checks the file first; writes nothing unless every scenario in it is right. */
async function importScenariosCommand(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: ENV_OPTION, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const env = parseEnvironment(parsed.values.env as string | undefined);
  if (parsed.positionals.length !== 1) throw new UsageError('expected exactly one scenario file');
  const file = parsed.positionals[0]!;
  let data: unknown;
  try {
    data = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    console.error(`import-scenarios: ${file}: ${(err as Error).message}; nothing was written`);
    return 1;
  }
  const check = checkScenarioFile(data);
  if (!check.ok) {
    console.error(`import-scenarios: ${file} has ${check.problems.length} problem${check.problems.length === 1 ? '' : 's'}; nothing was written`);
    for (const problem of check.problems) console.error(`  ${problem}`);
    return 1;
  }
  const config = loadConfig();
  return withDb(config, env, async (db) => {
    await db.direct(migrate);
    const result = await db.transaction((tx) => upsertScenarios(tx, check.scenarios));
    for (const [verb, slugs] of Object.entries(result)) {
      if (slugs.length > 0) console.log(`${env}: ${verb} ${slugs.length}: ${slugs.join(', ')}`);
    }
    return 0;
  });
}

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  'import-scenarios': importScenariosCommand,
  migrate: migrateCommand,
  bootstrap: bootstrapCommand,
  'seed-demo': seedDemoCommand,
  ...BACKUP_COMMANDS,
  ...AUDIT_COMMANDS,
  ...SUBJECT_COMMANDS,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const run = command !== undefined && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (run === undefined) {
    console.error(command ? `Unknown command: ${command}\n\n${USAGE}` : USAGE);
    return 2;
  }
  try {
    return await run(rest);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${command}: ${err.message}\n\n${USAGE}`);
    return 2;
  }
}

// Failures (a locked embedded folder, an unreachable server, a bad configuration) print their own
// message, which names the cause; the command's transaction, if it had begun, was rolled back.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
