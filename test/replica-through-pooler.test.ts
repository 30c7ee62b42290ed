// A replica URL that is a connection pooler (issue 40, point 7): the service's pools sent the
// startup option `-c jit=off`, which PgBouncer refuses ("unsupported startup parameter: options"),
// so a replica behind one never connected and stayed down. A pool now stops sending the option
// once a server refuses it: the refused connection fails, the next one is made without it. Run
// where the suite has a PgBouncer (TEST_POOLER_URL: .ci/run's PgBouncer step); the "replica" here
// is the test database itself through the pooler, which the replica set finds connected and not
// in recovery instead of down.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/platform/db/postgres.js';
import { ReplicaSet } from '../src/platform/db/replicas.js';
import { silentLog } from './helpers/app.js';
import { createTestDatabase, TEST_POOLER_URL, type TestDatabase } from './helpers/stores.js';

describe.runIf(TEST_POOLER_URL !== undefined)('a replica URL that is a pooler (PgBouncer)', () => {
  let d: TestDatabase;
  beforeAll(async () => {
    d = await createTestDatabase();
  });
  afterAll(() => d?.drop());

  it('a pool without a direct URL connects through it: the refused first connection is the only failure', async () => {
    const db = openPostgres({ connectionString: d.pooledUrl!, max: 1 });
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 3; i++) {
        outcomes.push(await db.query<{ one: number }>('select 1 as one').then((r) => `ok ${r.rows[0]!.one}`, (err: Error) => err.message));
      }
      // The first may be refused (the option was sent); every one after it answers.
      expect(outcomes.slice(1)).toEqual(['ok 1', 'ok 1']);
      expect(['ok 1', 'unsupported startup parameter: options']).toContain(outcomes[0]);
    } finally {
      await db.close();
    }
  });

  it('a replica set polls it as connected (not in recovery), not down', async () => {
    const replicas = new ReplicaSet({ primary: d.db, urls: [d.pooledUrl!], maxLagSeconds: 5, poolSize: 1, applicationName: 'test', log: silentLog, pollMs: 20 });
    try {
      await replicas.start();
      const deadline = Date.now() + 5_000;
      while (replicas.status()[0]?.state !== 'not_in_recovery' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(replicas.status()[0]).toMatchObject({ state: 'not_in_recovery' });
    } finally {
      await replicas.close();
    }
  });
});
