// A replica set's timeline checks (issue 40), on the streaming replica pair of
// test/helpers/replica-pair.ts: a replica serves only once it has replayed this instance's mark
// of the primary's timeline, and a read that finds the primary on a new timeline or server goes to
// the primary. The primary is wrapped to answer as a promoted standby or another server would (its
// statements' text rewritten): the real failover is test/slow/replica-timeline.test.ts.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../src/platform/db/migrate.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { UNREACHABLE } from '../src/platform/db/read-positions.js';
import { ReplicaSet } from '../src/platform/db/replicas.js';
import { TIMELINE_SQL } from '../src/platform/db/timelines.js';
import { silentLog } from './helpers/app.js';
import { available, PRIMARY, REPLICA, sql, until, withDatabase } from './helpers/replica-pair.js';

describe.runIf(available)('a replica set on its own (the timeline checks)', () => {
  const database = `cms_replica_set_${randomBytes(5).toString('hex')}`;
  const primaryUrl = withDatabase(PRIMARY, database);
  const replicaUrl = withDatabase(REPLICA, database);
  const open = (pollMs: number) => {
    const primary = openPostgres({ connectionString: primaryUrl, max: 2 });
    return { primary, set: new ReplicaSet({ primary, urls: [replicaUrl], maxLagSeconds: 5, poolSize: 1, applicationName: 'replica-set-test', log: silentLog, pollMs }) };
  };

  beforeAll(async () => {
    await sql(PRIMARY, `create database ${database}`);
    const db = openPostgres({ connectionString: primaryUrl, max: 1 });
    try {
      await db.direct((d) => migrate(d));
    } finally {
      await db.close();
    }
    await until('the database on the replica', async () => (await sql(REPLICA, 'select 1 from pg_database where datname = $1', [database])).length === 1);
  }, 60_000);

  afterAll(async () => {
    await sql(PRIMARY, `drop database if exists ${database} with (force)`);
  }, 60_000);

  it('a read finding the primary on another timeline than the poller last saw (a promotion since its last pass) goes to the primary', async () => {
    const { primary, set } = open(600_000);
    try {
      await set.start();
      expect(set.status()[0]).toMatchObject({ state: 'ok' });
      expect(await set.positionOf(primary, 'someone')).toBe(0n);
      // The primary as a promoted standby answers: the same server, its timeline one on.
      const promoted = {
        query: <R,>(text: string, values?: readonly unknown[]) => primary.query<R>(text.replaceAll(TIMELINE_SQL, `(${TIMELINE_SQL}) + 1`), values),
        exec: (text: string) => primary.exec(text),
      };
      expect(await set.positionOf(promoted, 'someone')).toBe(UNREACHABLE);
      expect(await set.latestPosition(promoted)).toBe(UNREACHABLE);
      expect(await set.latestPosition(primary)).toBeGreaterThan(0n);
      await set.query(UNREACHABLE, 'select 1');
      expect(set.routed).toMatchObject({ replica: 0, primary_behind: 1 });
    } finally {
      await set.close();
      await primary.close();
    }
  });

  /** The primary as another server would answer: `rewrite` applied to every statement's text once `on()` is true; its marks written `slowMs` late. */
  const answeringAs = (real: ReturnType<typeof openPostgres>, on: () => boolean, rewrite: (text: string) => string, slowMs = 0) =>
    new Proxy(real, {
      get(target, prop) {
        if (prop !== 'query') return Reflect.get(target, prop);
        return async (text: string, values?: readonly unknown[], options?: { name?: string }) => {
          if (!on()) return target.query(text, values, options);
          if (text.startsWith('insert into timeline_marks')) await new Promise((resolve) => setTimeout(resolve, slowMs));
          return target.query(rewrite(text), values);
        };
      },
    });

  it('the poll that finds the primary on a new timeline takes every replica off before it awaits anything: a read meanwhile goes to the primary', async () => {
    const real = openPostgres({ connectionString: primaryUrl, max: 3 });
    let promoted = false;
    // A promoted standby: the same server, its timeline one on; its mark written 800 ms late.
    const primary = answeringAs(real, () => promoted, (text) => text.replaceAll(TIMELINE_SQL, `(${TIMELINE_SQL}) + 1`), 800);
    const set = new ReplicaSet({ primary, urls: [replicaUrl], maxLagSeconds: 5, poolSize: 1, applicationName: 'replica-set-test', log: silentLog, pollMs: 600_000 });
    try {
      await set.start();
      expect(set.status()[0]).toMatchObject({ state: 'ok' });
      promoted = true;
      const polling = (set as unknown as { poll(): Promise<void> }).poll();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const position = await set.positionOf(primary, 'someone');
      expect(set.status()[0]).toMatchObject({ state: 'other_timeline' });
      await set.query(position, 'select 1');
      expect(set.routed).toMatchObject({ replica: 0 });
      await polling;
    } finally {
      await set.close();
      await real.close();
    }
  });

  it('another server on the same timeline (a restore, pg_upgrade) gets a new mark: the one from before proves nothing there', async () => {
    const real = openPostgres({ connectionString: primaryUrl, max: 3 });
    let restarted = false;
    const primary = answeringAs(real, () => restarted, (text) => text.replaceAll('pg_postmaster_start_time()', "(pg_postmaster_start_time() + interval '1 second')"));
    const set = new ReplicaSet({ primary, urls: [replicaUrl], maxLagSeconds: 5, poolSize: 1, applicationName: 'replica-set-test', log: silentLog, pollMs: 20 });
    const marks = async () => (await sql(primaryUrl, 'select count(*)::int as n from timeline_marks'))[0]!.n as number;
    try {
      await set.start();
      await until('the replica to serve', () => set.status()[0]!.state === 'ok');
      const before = await marks();
      restarted = true;
      await until('a new mark', async () => (await marks()) === before + 1);
      await until('the replica to serve again', () => set.status()[0]!.state === 'ok');
    } finally {
      await set.close();
      await real.close();
    }
  });

  it('a primary that refuses writes before any mark is written: the replica is off the timeline, and the pool is not replaced at every poll', async () => {
    const sessions = async () => (await sql(PRIMARY, 'select sessions::int as n from pg_stat_database where datname = $1', [database]))[0]!.n as number;
    await sql(PRIMARY, `alter database ${database} set default_transaction_read_only = on`);
    const { primary, set } = open(20);
    try {
      await set.start();
      const before = await sessions();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // About 75 polls: the pool keeps its connections (each refused mark replaced them before).
      expect((await sessions()) - before).toBeLessThanOrEqual(2);
      // (Under load a probe may first miss its deadline: down until the next poll.)
      await until('the replica off the timeline', () => set.status()[0]!.state === 'other_timeline');
      expect(set.status()[0]!.last_error).toMatch(/none written yet/);
    } finally {
      await set.close();
      await primary.close();
      await sql(PRIMARY, `alter database ${database} reset default_transaction_read_only`);
    }
  });
});
