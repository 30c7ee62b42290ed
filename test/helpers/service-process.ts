// The built service (dist/src/server.js) as a real child process on a port of its own.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, databaseEnv, onPostgres, type TestDatabase } from './stores.js';

export const SERVER = join(import.meta.dirname, '../../dist/src/server.js');
/**
 * Node's flags for the service and CLI processes tests start. They live seconds: compiling PGlite's
 * WebAssembly a second time for V8's optimising tier (TurboFan, on another core) cost them 40% of
 * their CPU and paid back nothing. The baseline compiler runs the same code, only slower.
 */
export const NODE_FLAGS = ['--liftoff-only'];

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Service {
  child: ChildProcessWithoutNullStreams;
  port: number;
  url: string;
  logs: string[];
  exited: Promise<number | null>;
  /** Resolves on the "Server listening" log line (LOG_LEVEL info or finer). */
  ready: Promise<void>;
}

/**
 * `env` for a service process on the store under test: on PostgreSQL each environment gets an
 * empty database of its own (pushed to `databases`, for the caller to drop); on PGlite, `env` as it is.
 */
export async function withServiceDatabases(env: Record<string, string>, databases: TestDatabase[]): Promise<Record<string, string>> {
  if (!onPostgres) return env;
  const urls: Record<string, string> = {};
  for (const name of ['PRODUCTION', 'DEMO']) {
    const db = await createTestDatabase({ empty: true });
    databases.push(db);
    Object.assign(urls, databaseEnv(name, db));
  }
  return { ...env, ...urls };
}

/** Spawns the service with exactly `env` (plus PATH); `PORT` must be set. */
export function startService(env: Record<string, string>): Service {
  const child = spawn(process.execPath, [...NODE_FLAGS, SERVER], { env: { PATH: process.env.PATH, ...env } });
  const logs: string[] = [];
  let buffer = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      logs.push(...lines);
      if (lines.some((l) => l.includes('Server listening'))) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited with ${code}: ${logs.join('\n')}`)));
  });
  // Callers that wait another way (answering) must not leave the rejection unhandled.
  ready.catch(() => undefined);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, port: Number(env.PORT), url: `http://127.0.0.1:${env.PORT}`, logs, exited, ready };
}

/** Polls GET / until the service answers (for services started below LOG_LEVEL info). */
export async function answering(service: Service, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  service.exited.then(() => (exited = true), () => (exited = true));
  while (Date.now() < deadline && !exited) {
    try {
      if ((await fetch(`${service.url}/`)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`service on ${service.port} not answering:\n${service.logs.join('\n')}`);
}
