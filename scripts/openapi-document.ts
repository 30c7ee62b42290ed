// The OpenAPI document as the service serves it (GET /openapi.json): the app built as server.ts
// builds it, on in-memory databases (the document needs an environment to answer, not data), with
// the demo's local sign-in on, so that every operation some configuration serves is in it.
// `npm run lint:openapi` lints it (scripts/lint-openapi.ts); test/openapi-document.test.ts checks
// that it is what the tests' app serves.
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { parseConfig } from '../src/config.js';
import { Environments, type OpenDb } from '../src/platform/environments.js';

/** The one setting that adds operations (DEMO_LOCAL_SIGNIN: GET and POST /auth/local). */
export const EVERY_ROUTE_ENV = { DEMO_LOCAL_SIGNIN: 'true' } as const;

export interface DocumentOptions {
  /** Where the environments' databases come from (in memory by default; the tests pass their store's). */
  openDb?: OpenDb;
}

/** GET /openapi.json's body, byte for byte. */
export async function servedOpenApiDocument({ openDb }: DocumentOptions = {}): Promise<string> {
  const log = pino({ level: 'silent' });
  const config = parseConfig({ DATA_DIR: ':memory:', LOG_LEVEL: 'silent', ...EVERY_ROUTE_ENV });
  const environments = await Environments.open(config, { log, sealing: false, openDb });
  const app = await buildApp({ config, environments, logger: log });
  try {
    const response = await app.inject({ url: '/openapi.json' });
    if (response.statusCode !== 200) throw new Error(`GET /openapi.json answered ${response.statusCode}: ${response.body}`);
    return response.body;
  } finally {
    await app.close();
  }
}
