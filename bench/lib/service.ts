import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onCleanup } from './cleanup.js';
import { sharedFakeChat } from './fake-chat.js';
import { spawnNode, waitReady, type Child } from './proc.js';

export const SERVICE_NAME = 'Bench';
export const READY_TEXT = `${SERVICE_NAME} API Online`;
export const API_KEY = `bench-prod-${randomBytes(12).toString('hex')}`;
export const DEMO_API_KEY = `bench-demo-${randomBytes(12).toString('hex')}`;
const PSEUDONYM_KEY = `bench-pseudonym-${randomBytes(16).toString('hex')}`;

/** dist/bench/lib/service.js -> dist/src/server.js; BENCH_SERVICE_SCRIPT overrides it (harness self-tests). */
export const SERVICE_SCRIPT =
  process.env.BENCH_SERVICE_SCRIPT ?? fileURLToPath(new URL('../../src/server.js', import.meta.url));

export function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-data-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface ServiceStart {
  /** Default: a fresh one. */
  dataDir?: string;
  productionUrl?: string;
  demoUrl?: string;
  logLevel?: string;
  /** The fake chat platform's OAuth endpoints (bench/lib/fake-chat.ts), so that sessions sign in through the real flow. */
  chat?: boolean;
  /** More variables, on top of the fake chat's. */
  extraEnv?: Record<string, string>;
  /** Another build's dist/src/server.js (default SERVICE_SCRIPT), and the label in its errors. */
  script?: string;
  label?: string;
}

/** Spawns the service without waiting; pair with waitReady(child, READY_TEXT). */
export async function spawnService(opts: ServiceStart): Promise<Child> {
  const env: Record<string, string | undefined> = {
    DATA_DIR: opts.dataDir ?? freshDataDir(),
    PRODUCTION_API_KEY: API_KEY,
    DEMO_API_KEY: DEMO_API_KEY,
    // Erasures on PostgreSQL need the environment's pseudonym key (subject-privacy).
    PRODUCTION_PSEUDONYM_KEY: PSEUDONYM_KEY,
    DEMO_PSEUDONYM_KEY: `${PSEUDONYM_KEY}-demo`,
    LOG_LEVEL: opts.logLevel ?? 'warn',
    SERVICE_NAME,
    PRODUCTION_DATABASE_URL: opts.productionUrl,
    DEMO_DATABASE_URL: opts.demoUrl,
    ...(opts.chat ? (await sharedFakeChat()).env : {}),
    ...opts.extraEnv,
  };
  return spawnNode(opts.label ?? 'service', opts.script ?? SERVICE_SCRIPT, env);
}

export async function startService(opts: ServiceStart): Promise<{ child: Child; readyMs: number }> {
  const child = await spawnService(opts);
  return { child, readyMs: await waitReady(child, READY_TEXT) };
}
