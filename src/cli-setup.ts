// The setup commands of `npm run cli` (src/cli.ts): migrate and bootstrap.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { findAgent, insertAgent, updateAgent, type AgentRow } from './agents/queries.js';
import { ENV_OPTION, migrateForCommand, parseEnvironment, parseOptions, UsageError } from './cli-options.js';
import { ENVIRONMENTS, loadConfig, type Config, type EnvironmentName } from './config.js';
import { recordAudit } from './platform/audit.js';
import type { Db, Tx } from './platform/db/types.js';
import { defaultOpenDb } from './platform/environments.js';

/** One environment's database, opened as the service opens it, closed after `fn`. */
export async function withDb<T>(config: Config, name: EnvironmentName, fn: (db: Db) => Promise<T>): Promise<T> {
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
    const applied = await withDb(config, name, migrateForCommand);
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
    await migrateForCommand(db);
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

export const SETUP_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  migrate: migrateCommand,
  bootstrap: bootstrapCommand,
};
