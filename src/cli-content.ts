// The content commands of `npm run cli` (src/cli.ts): seed-demo and import-scenarios. Apart from
// the setup commands, as the demo seed and the scenario checker weigh most of a CLI start.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { withDb } from './cli-setup.js';
import { ENV_OPTION, migrateForCommand, parseEnvironment, parseOptions, UsageError } from './cli-options.js';
import { loadConfig } from './config.js';
import { resetDemo, type SeedCounts } from './demo/seed.js';
import { checkScenarioFile } from './training/scenario-file.js';
import { upsertScenarios } from './training/scenario-queries.js';

async function seedDemoCommand(args: string[]): Promise<number> {
  parseOptions(args, {});
  const config = loadConfig();
  return withDb(config, 'demo', async (db) => {
    const applied = await migrateForCommand(db);
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
    await migrateForCommand(db);
    const result = await db.transaction((tx) => upsertScenarios(tx, check.scenarios));
    for (const [verb, slugs] of Object.entries(result)) {
      if (slugs.length > 0) console.log(`${env}: ${verb} ${slugs.length}: ${slugs.join(', ')}`);
    }
    return 0;
  });
}

export const CONTENT_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  'seed-demo': seedDemoCommand,
  'import-scenarios': importScenariosCommand,
};
