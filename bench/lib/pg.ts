import pg from 'pg';
import { onCleanup } from './cleanup.js';
import { countAsOurs } from './machine.js';

export interface BenchDatabases {
  productionUrl: string;
  demoUrl: string;
}

/** One statement-running client on `url`, closed after `fn`. */
export async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** `url` naming the database `name` on the same server. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Creates two fresh databases next to `url` and registers their removal, also on failure and Ctrl-C.
 * The server's work is then counted as part of the run, not as outside load (bench/lib/machine.ts).
 */
export async function createBenchDatabases(url: string): Promise<BenchDatabases> {
  countAsOurs('postgres');
  const base = `bench_${process.pid}_${Date.now().toString(36)}`;
  const names = [`${base}_production`, `${base}_demo`] as const;
  const created: string[] = [];
  onCleanup(() =>
    admin(url, async (c) => {
      // FORCE: a killed service may still hold connections.
      for (const name of created) await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }),
  );
  await admin(url, async (c) => {
    for (const name of names) {
      await c.query(`CREATE DATABASE "${name}"`);
      created.push(name);
    }
  });
  return { productionUrl: withDatabase(url, names[0]), demoUrl: withDatabase(url, names[1]) };
}
