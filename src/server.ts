// Process entry: read the config, open both environments, listen, and shut down gracefully on
// SIGTERM/SIGINT (stop accepting, let in-flight requests finish, close the databases).
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { Environments } from './platform/environments.js';
import { collectGarbageOnce } from './platform/memory.js';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}

const config = readConfig();
const log = pino({ level: config.logLevel });

let environments: Environments;
try {
  environments = await Environments.open(config, { log });
} catch (err) {
  log.fatal({ err }, (err as Error).message);
  process.exit(1);
}

if (Object.values(config.environments).some((env) => !env.databaseUrl)) collectGarbageOnce();

const app = await buildApp({ config, environments, logger: log });

closeWithGrace({ delay: 10_000, logger: log }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'shutting down after an unhandled error');
  else log.info({ signal }, 'shutting down');
  await app.close();
});

await app.listen({ port: config.port, host: config.host });
