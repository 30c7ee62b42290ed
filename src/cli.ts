// Operator commands: `npm run cli -- <command> [options]`.
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ENVIRONMENTS, loadConfig, type EnvironmentName } from './config.js';
import { defaultOpenDb } from './platform/environments.js';
import { migrate } from './platform/db/migrate.js';

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate [--env production|demo]   apply pending migrations (both environments by default)
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({ args: rest, options: { env: { type: 'string' } }, allowPositionals: false });
  const config = loadConfig();
  const log = pino({ level: 'warn' });
  const targets = values.env === undefined ? [...ENVIRONMENTS] : [parseEnvironment(values.env)];

  switch (command) {
    case 'migrate': {
      const open = defaultOpenDb(config, log);
      for (const name of targets) {
        const db = await open(config.environments[name]);
        try {
          const applied = await migrate(db);
          console.log(`${name}: ${applied.length === 0 ? 'up to date' : `applied ${applied.join(', ')}`}`);
        } finally {
          await db.close();
        }
      }
      return 0;
    }
    default:
      console.error(command ? `Unknown command: ${command}\n\n${USAGE}` : USAGE);
      return 2;
  }
}

function parseEnvironment(value: string): EnvironmentName {
  if (!(ENVIRONMENTS as readonly string[]).includes(value)) throw new Error(`--env must be one of ${ENVIRONMENTS.join(', ')}`);
  return value as EnvironmentName;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
