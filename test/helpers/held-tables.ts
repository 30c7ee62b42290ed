// Putting a request's statements in a chosen order against another session (PostgreSQL only). The
// other session takes a table in its own transaction; the request is started and seen waiting for
// that table in pg_locks (no sleeps); the test makes its concurrent change there, or through the
// routes, and commits; the request goes on. The statements before the wait have run by then, the
// ones from the wait on run after the commit: exactly the interleaving under test.
import pg from 'pg';
import { expect, vi } from 'vitest';
import type { Db } from '../../src/platform/db/types.js';

export interface HeldTable {
  /** A statement in the holding transaction. */
  query(sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /** Commits the holding transaction: whoever waits for the table goes on. */
  commit(): Promise<void>;
  /** Ends the connection (a transaction still open rolls back). Safe to call twice. */
  close(): Promise<void>;
}

/** A transaction on its own connection holding `table` against every other statement, reads included. */
export async function holdTable(url: string, table: string): Promise<HeldTable> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('begin');
  await client.query(`lock table ${table} in access exclusive mode`);
  let open = true;
  const close = async () => {
    if (!open) return;
    open = false;
    await client.end();
  };
  return {
    query: async (sql, values = []) => (await client.query(sql, values)).rows,
    commit: async () => void (await client.query('commit')),
    close,
  };
}

/** Resolves once some session of `db`'s database waits for a lock on `table`. */
export async function waitingFor(db: Db, table: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const { rows } = await db.query<{ waiting: boolean }>(
        'select exists (select 1 from pg_locks where relation = $1::text::regclass and not granted) as waiting',
        [table],
      );
      expect(rows[0]!.waiting, `a session waiting for ${table}`).toBe(true);
    },
    { timeout: 10_000, interval: 10 },
  );
}
