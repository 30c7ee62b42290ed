// Read replicas with read-your-writes (issue 22), against a real streaming replica: the pair of
// test/helpers/replica-pair.ts. The replica set's own timeline checks: replica-timelines.test.ts.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/platform/db/postgres.js';
import { formatLsn, parseLsn } from '../src/platform/db/replicas.js';
import { createTestApp, DASHBOARD_ORIGIN, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { switchable } from './helpers/failures.js';
import { chatId, signedIn } from './helpers/identity.js';
import { capturedLog } from './helpers/log-capture.js';
import { available, CLUSTER, PRIMARY, REPLICA, sql, until, withDatabase } from './helpers/replica-pair.js';
import { createSession, get, importDemoScenarios, newTrainee, newTrainer, post } from './helpers/training.js';

const key = { authorization: PRODUCTION_KEY };

const cluster = async (action: 'stop' | 'start') => {
  const version = (await sql<{ v: string }>(PRIMARY, "select current_setting('server_version_num')::int / 10000 as v"))[0]!.v;
  await promisify(execFile)('pg_ctlcluster', ['--skip-systemctl-redirect', String(version), CLUSTER, action, ...(action === 'stop' ? ['-m', 'fast'] : [])]);
};

describe('WAL positions', () => {
  it('reads WAL positions as PostgreSQL writes them, in order', () => {
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
    expect(formatLsn(parseLsn('16/B374D848'))).toBe('16/B374D848');
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
    expect(() => parseLsn('16B374D848')).toThrow(/not a WAL position/);
  });
});

describe.runIf(available)('read replicas (a real streaming replica)', () => {
  const database = `cms_replica_${randomBytes(5).toString('hex')}`;
  const primaryUrl = withDatabase(PRIMARY, database);
  const replicaUrl = withDatabase(REPLICA, database);
  let a: TestApp;
  let b: TestApp;

  const open = (env: Record<string, string> = {}) =>
    createTestApp({
      env: { PRODUCTION_DATABASE_URL: primaryUrl, PRODUCTION_DATABASE_REPLICA_URLS: replicaUrl, ...env },
      openDb: { production: async (config) => openPostgres({ connectionString: config.databaseUrl!, max: 5 }) },
    });
  const replicas = (t: TestApp) => t.environments.get('production')!.replicas!;
  const routed = (t: TestApp) => ({ ...replicas(t).routed });
  const health = async (t: TestApp, headers: Record<string, string>) => {
    const res = await t.app.inject({ method: 'GET', url: '/admin/health', headers });
    expect(res.statusCode).toBe(200);
    return res.json().database;
  };
  const servingAgain = (t: TestApp) => until('the replica to serve again', () => replicas(t).status()[0]!.state === 'ok');

  let n = 0;
  const newReport = () => ({ report_id: `RR-${process.pid}-${++n}`, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' });
  const create = async (t: TestApp, headers: Record<string, string> = key) => {
    const payload = newReport();
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers, payload });
    expect(res.statusCode).toBe(201);
    return payload.report_id;
  };
  const read = (t: TestApp, id: string, headers: Record<string, string> = key) => t.app.inject({ method: 'GET', url: `/reports/${id}`, headers });

  beforeAll(async () => {
    await sql(PRIMARY, `create database ${database}`);
    // The new database reaches the replica by replication like everything else.
    await until('the database on the replica', async () => (await sql(REPLICA, 'select 1 from pg_database where datname = $1', [database])).length === 1);
    a = await open();
    b = await open();
    await servingAgain(a);
    await servingAgain(b);
  }, 60_000);

  afterAll(async () => {
    // Whatever a test left behind, the replica replays and runs again for the next file and run.
    await cluster('start').catch(() => undefined);
    await sql(REPLICA, 'select pg_wal_replay_resume()').catch(() => undefined);
    await b?.close();
    await a?.close();
    await sql(PRIMARY, `drop database if exists ${database} with (force)`);
  }, 60_000);

  it('reads from the replica, and a caller reads its own create and update at once, also on another instance', async () => {
    const before = routed(a);
    const id = await create(a);
    // The bot's position is on the primary, at or past the commit.
    const [position] = await sql(primaryUrl, "select lsn::text as lsn from read_positions where caller = 'key'");
    expect(parseLsn(position!.lsn)).toBeGreaterThan(0n);
    const res = await read(a, id);
    expect(res.statusCode).toBe(200);
    expect(res.json().report).toMatchObject({ report_id: id, status: 'Open' });

    const patched = await a.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: key, payload: { notes: 'changed just now' } });
    expect(patched.statusCode).toBe(200);
    // The next read on the other instance: it knows nothing of the write but the position.
    const onB = await read(b, id);
    expect(onB.statusCode).toBe(200);
    expect(onB.json().report.notes).toBe('changed just now');
    const list = await b.app.inject({ method: 'GET', url: '/reports?limit=5', headers: key });
    expect(list.json().reports.map((r: { report_id: string }) => r.report_id)).toContain(id);

    // The replica serves these reads once it has replayed the caller's change (in milliseconds
    // here; under load a read may first go to the primary, fresh all the same).
    const fromReplica = routed(b).replica;
    await until('a read of the update served by the replica', async () => {
      expect((await read(b, id)).json().report.notes).toBe('changed just now');
      return routed(b).replica > fromReplica;
    });
    expect(routed(a).replica + routed(b).replica).toBeGreaterThan(before.replica + fromReplica);
    expect(replicas(a).status()[0]).toMatchObject({ state: 'ok', paused: false, last_error: null });
    // The same figures in the metrics.
    const text = await a.metrics.scrape();
    const replicaName = new URL(replicaUrl).host + new URL(replicaUrl).pathname;
    expect(text).toContain(`cms_db_replica_serving{environment="production",replica="${replicaName}"} 1`);
    expect(text).toContain(`cms_db_reads_total{environment="production",route="replica"} ${routed(a).replica}`);
    expect(text).toMatch(new RegExp(`cms_db_replica_lag_seconds\\{environment="production",replica="${replicaName}"\\} [0-9.]+`));
  });


  it("a caller's position taken on another timeline (a failover since) sends its reads to the primary; positions are logged, so a promoted standby has them", async () => {
    const id = await create(a);
    const [position] = await sql(primaryUrl, "select timeline, (select relpersistence from pg_class where relname = 'read_positions') as persistence from read_positions where caller = 'key'");
    expect(position).toMatchObject({ timeline: expect.any(Number), persistence: 'p' });
    await until('the report on the replica', async () => (await sql(replicaUrl, 'select 1 from reports where report_id = $1', [id])).length === 1);
    await servingAgain(b);
    // The position as a primary before a promotion wrote it (tampering: one timeline back).
    await sql(primaryUrl, "update read_positions set timeline = timeline - 1 where caller = 'key'");
    const before = routed(b);
    expect((await read(b, id)).statusCode).toBe(200);
    expect(routed(b)).toMatchObject({ primary_behind: before.primary_behind + 1, replica: before.replica });
    // The caller's next write records the primary's timeline again: the replica serves it once replayed.
    const patched = await a.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: key, payload: { notes: 'after the failover' } });
    expect(patched.statusCode).toBe(200);
    const [again] = await sql(primaryUrl, "select timeline = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int as current from read_positions where caller = 'key'");
    expect(again).toEqual({ current: true });
    const fromReplica = routed(b).replica;
    await until('a read served by the replica again', async () => {
      expect((await read(b, id)).json().report.notes).toBe('after the failover');
      return routed(b).replica > fromReplica;
    });
  });

  it('with replay paused: the writer reads fresh from the primary, a caller who wrote nothing reads the replica', async () => {
    const director = await signedIn(a, { rank: 'Director', clearance: 5, allowlisted: true });
    const id = await create(a);
    await until('the report on the replica', async () => (await sql(replicaUrl, 'select 1 from reports where report_id = $1', [id])).length === 1);
    await sql(REPLICA, 'select pg_wal_replay_pause()');
    await until('replay paused', async () => (await sql(REPLICA, 'select pg_get_wal_replay_pause_state() as s'))[0]!.s === 'paused');
    try {
      const before = routed(b);
      // The session adds an agent through instance a...
      const newcomer = chatId();
      const created = await a.app.inject({ method: 'POST', url: '/agents/create', headers: { ...director.headers, origin: DASHBOARD_ORIGIN }, payload: { chat_id: newcomer, name: 'Rae Replica' } });
      expect(created.statusCode).toBe(201);
      // ...and reads it through instance b: the replica has not replayed the change, so after a
      // bounded wait the primary answers, fresh.
      const mine = await b.app.inject({ method: 'GET', url: `/agents/${newcomer}`, headers: director.headers });
      expect(mine.statusCode).toBe(200);
      expect(mine.json().agent).toMatchObject({ chat_id: newcomer, name: 'Rae Replica' });
      expect(routed(b).primary_behind).toBe(before.primary_behind + 1);
      // The bot's update of the report while paused is fresh for the bot too.
      const patched = await a.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: key, payload: { notes: 'while paused' } });
      expect(patched.statusCode).toBe(200);
      expect((await read(b, id)).json().report.notes).toBe('while paused');
      expect(routed(b).primary_behind).toBe(before.primary_behind + 2);
      // A caller who changed nothing since the report reached the replica (the bot, its position
      // forgotten here) reads the replica, and sees the report as the replica has it: stale by
      // the pause, as replication allows.
      await sql(primaryUrl, "delete from read_positions where caller = 'key'");
      const bots = await read(b, id);
      expect(bots.json().report.notes).toBe('n');
      expect(routed(b).replica).toBe(before.replica + 1);
      // Health shows the pause.
      const db = await health(b, director.headers);
      expect(db.replicas[0]).toMatchObject({ paused: true });
    } finally {
      await sql(REPLICA, 'select pg_wal_replay_resume()');
    }
    // Replay resumed: the session's reads return to the replica.
    await until('replay caught up', async () => (await sql(replicaUrl, 'select notes from reports where report_id = $1', [id]))[0]?.notes === 'while paused');
    await servingAgain(b);
    const before = routed(b);
    await until('a read served by the replica again', async () => {
      expect((await read(b, id, director.headers)).json().report.notes).toBe('while paused');
      return routed(b).replica > before.replica;
    });
  });

  it('a training session read sees the latest change, another member\'s too (a broadcast arrives before a replica may have it)', async () => {
    const scenarios = await importDemoScenarios(a.db.production);
    const trainer = await newTrainer(a);
    const trainee = await newTrainee(a);
    const id = await createSession(a, trainer, trainee, Object.values(scenarios)[0]);
    await until('the session on the replica', async () => (await sql(replicaUrl, 'select 1 from training_sessions where id = $1', [id])).length === 1);
    await sql(REPLICA, 'select pg_wal_replay_pause()');
    await until('replay paused', async () => (await sql(REPLICA, 'select pg_get_wal_replay_pause_state() as s'))[0]!.s === 'paused');
    try {
      const before = routed(b);
      expect((await post(a, `/training/sessions/${id}/start`, trainer)).statusCode).toBe(200);
      // The trainee changed nothing; on the paused replica the session is still pending (409 for a trainee).
      const seen = await get(b, `/training/sessions/${id}`, trainee);
      expect(seen.statusCode).toBe(200);
      expect(seen.json().session).toMatchObject({ id, status: 'active' });
      expect(routed(b).primary_behind).toBeGreaterThan(before.primary_behind);
      expect(routed(b).replica).toBe(before.replica);
    } finally {
      await sql(REPLICA, 'select pg_wal_replay_resume()');
    }
    await until('replay caught up', async () => (await sql(replicaUrl, 'select status from training_sessions where id = $1', [id]))[0]?.status === 'active');
    await servingAgain(b);
    const before = routed(b);
    // The next read may wait a moment for the replica to reach the primary's position, then reads it.
    await until('a session read served by the replica', async () => {
      const res = await get(b, `/training/sessions/${id}`, trainee);
      expect(res.json().session.status).toBe('active');
      return routed(b).replica > before.replica;
    });
  });

  it('a replica further behind than REPLICA_MAX_LAG_SECONDS is skipped, shown lagging, and serves again once it catches up', async () => {
    const strict = await open({ REPLICA_MAX_LAG_SECONDS: '0.5' });
    try {
      await servingAgain(strict);
      const director = await signedIn(strict, { rank: 'Director', clearance: 5, allowlisted: true });
      await sql(REPLICA, 'select pg_wal_replay_pause()');
      try {
        // Writes go on while the replica stands still.
        await create(strict);
        await until('the replica to be lagging', () => replicas(strict).status()[0]!.state === 'lagging');
        const db = await health(strict, director.headers);
        expect(db.status).toBe('warn');
        expect(db.reasons.join(' ')).toMatch(/behind the primary: skipped/);
        expect(db.replicas[0]).toMatchObject({ state: 'lagging', paused: true });
        expect(db.replicas[0].lag_s).toBeGreaterThan(0.5);
        const before = routed(strict);
        await sql(primaryUrl, "delete from read_positions where caller = 'key'");
        const list = await strict.app.inject({ method: 'GET', url: '/reports?limit=5', headers: key });
        expect(list.statusCode).toBe(200);
        // Every statement of the page (rows, then counts) went to the primary.
        expect(routed(strict).primary_unavailable).toBeGreaterThan(before.primary_unavailable);
        expect(routed(strict).replica).toBe(before.replica);
      } finally {
        await sql(REPLICA, 'select pg_wal_replay_resume()');
      }
      await servingAgain(strict);
      // Caught up again: within the limit (the health answer's own write may have moved the primary a little since).
      const db = await health(strict, director.headers);
      expect(db.replicas[0]).toMatchObject({ state: 'ok', paused: false });
      expect(db.replicas[0].lag_s).toBeLessThan(0.5);
    } finally {
      await strict.close();
    }
  });

  it("a replica that has not replayed this instance's mark of the primary's timeline (as one a failover left on the old timeline) serves no read until it has", async () => {
    // The slow step's test/slow/replica-timeline.test.ts leaves a real replica on an old timeline;
    // here the replica stands still (replay paused) while the mark is taken away on the primary
    // (tampering): the poller writes a new one, which the replica has not replayed.
    const director = await signedIn(a, { rank: 'Director', clearance: 5, allowlisted: true });
    const id = await create(a);
    await servingAgain(a);
    await sql(REPLICA, 'select pg_wal_replay_pause()');
    try {
      await sql(primaryUrl, 'delete from timeline_marks');
      await until('the replica to be off the timeline', () => replicas(a).status()[0]!.state === 'other_timeline');
      const db = await health(a, director.headers);
      expect(db.status).toBe('warn');
      expect(db.reasons.join(' ')).toMatch(/not on the primary's timeline: skipped/);
      expect(db.replicas[0]).toMatchObject({ state: 'other_timeline', lag_s: null });
      await sql(primaryUrl, "delete from read_positions where caller = 'key'");
      const before = routed(a);
      const res = await read(a, id);
      expect(res.statusCode).toBe(200);
      expect(routed(a).replica).toBe(before.replica);
      expect(routed(a).primary_unavailable).toBeGreaterThan(before.primary_unavailable);
      // A mark of a higher timeline (a cluster pg_upgrade started again at timeline 1 keeps the old
      // cluster's marks) changes nothing: the replica follows once it has this instance's token.
      await sql(primaryUrl, "insert into timeline_marks (token, timeline) values (gen_random_uuid(), 99)");
    } finally {
      await sql(REPLICA, 'select pg_wal_replay_resume()');
    }
    await servingAgain(a);
    // Serving again with the higher mark still there.
    expect(await sql(primaryUrl, 'select timeline from timeline_marks where timeline = 99')).toEqual([{ timeline: 99 }]);
  });

  it('the replica stopped: no request fails, health says it is down; started again: reads return to it (counted)', async () => {
    const director = await signedIn(a, { rank: 'Director', clearance: 5, allowlisted: true });
    const id = await create(a);
    await cluster('stop');
    try {
      // Before the poller notices, a read finds the replica gone and the primary answers.
      await sql(primaryUrl, "delete from read_positions where caller = 'key'");
      for (let i = 0; i < 20; i++) {
        const res = await read(a, id);
        expect(res.statusCode).toBe(200);
        expect(res.json().report.report_id).toBe(id);
        const list = await a.app.inject({ method: 'GET', url: '/audit?limit=5', headers: key });
        expect(list.statusCode).toBe(200);
      }
      await until('the replica to be down', () => replicas(a).status()[0]!.state === 'down');
      const db = await health(a, director.headers);
      expect(db.status).toBe('warn');
      expect(db.replicas[0]).toMatchObject({ state: 'down', lag_s: null });
      expect(db.replicas[0].last_error).toEqual(expect.any(String));
      const before = routed(a);
      expect((await read(a, id)).statusCode).toBe(200);
      expect(routed(a).primary_unavailable).toBe(before.primary_unavailable + 1);
    } finally {
      await cluster('start');
    }
    await servingAgain(a);
    const before = routed(a);
    const reads = replicas(a).status()[0]!.reads;
    const res = await read(a, id);
    expect(res.json().report.report_id).toBe(id);
    expect(routed(a).replica).toBe(before.replica + 1);
    expect(replicas(a).status()[0]!.reads).toBe(reads + 1);
  }, 60_000);
  it('a change records its read position whatever its status (answered 500 after its commit too) but 503, a conversion none; a primary that cannot be reached is one outage line, not an error per request', async () => {
    const { logger, lines } = capturedLog();
    let primary!: ReturnType<typeof switchable>;
    const c = await createTestApp({
      env: { PRODUCTION_DATABASE_URL: primaryUrl, PRODUCTION_DATABASE_REPLICA_URLS: replicaUrl },
      openDb: { production: async (config) => (primary = switchable(openPostgres({ connectionString: config.databaseUrl!, max: 5 }))).db },
      logger,
      extend(api) {
        // A change committed, then an answer that fails (as an answer that cannot be serialised).
        api.post('/test/committed-then-500', { config: { auth: 'key' } }, async (request) => {
          await request.environment.db.transaction((tx) => tx.query('insert into position_check default values'));
          throw new Error('the answer failed after the commit');
        });
      },
    });
    const position = () => sql(primaryUrl, "select caller from read_positions where caller = 'key'");
    const forget = () => sql(primaryUrl, "delete from read_positions where caller = 'key'");
    try {
      await sql(primaryUrl, 'create table if not exists position_check (id serial primary key)');
      await forget();
      const converted = await c.app.inject({ method: 'POST', url: '/util/timestamp', headers: { ...key, 'idempotency-key': 'rp-1' }, payload: { date: 'Thu Jan 01 1970 00:00:00 GMT+0000 (UTC)' } });
      expect({ status: converted.statusCode, body: converted.json() }).toEqual({ status: 200, body: { success: true, timestamp: 0 } });
      expect(await position()).toEqual([]);
      // A change committed and answered 500: its caller's next reads must still see it.
      const failed = await c.app.inject({ method: 'POST', url: '/test/committed-then-500', headers: key });
      expect({ status: failed.statusCode, code: failed.json().code }).toEqual({ status: 500, code: 'INTERNAL_ERROR' });
      // (Under the suite's keyed run, TEST_IDEMPOTENCY_KEYS, the request is one transaction with its
      // key, which its 5xx rolls back: its retry runs afresh.)
      expect(await sql(primaryUrl, 'select count(*)::int as n from position_check')).toEqual([{ n: process.env.TEST_IDEMPOTENCY_KEYS === '1' ? 0 : 1 }]);
      expect(await position()).toEqual([{ caller: 'key' }]);
      await forget();
      lines.length = 0;
      primary.setDown(true);
      const refusedBefore = primary.refused().length;
      for (let i = 0; i < 3; i++) {
        const res = await c.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: newReport() });
        expect({ status: res.statusCode, code: res.json().code }).toEqual({ status: 503, code: 'DATABASE_UNAVAILABLE' });
        expect((await c.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { report_id: 'no reporter' } })).statusCode).toBe(400);
      }
      primary.setDown(false);
      // Each 503 sent its own statement only (no second wait to record a position); each 400 (its
      // body refused before its handler) tried to record one. (Background work of the instance,
      // such as the replica set's marks, may have been refused meanwhile too: not counted.)
      const recordings = primary.refused().slice(refusedBefore).filter((what) => what.includes('insert into read_positions'));
      expect(recordings).toHaveLength(3);
      expect(lines.map((line) => line.msg)).toEqual(['production database unreachable: answering 503 until it is back (Database unavailable: connect ECONNREFUSED 127.0.0.1:5432)']);
      expect(await position()).toEqual([]);
      // A change whose position cannot be recorded (its table renamed away) is answered, and the
      // failure logged at error even though request logging is off (LOG_LEVEL above info).
      lines.length = 0;
      await sql(primaryUrl, 'alter table read_positions rename to read_positions_away');
      try {
        const res = await c.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: newReport() });
        expect(res.statusCode).toBe(201);
        expect(lines.map((line) => ({ level: line.level, msg: line.msg, request_id: line.request_id, caller: line.caller }))).toContainEqual({
          level: 50,
          msg: 'read position not recorded',
          request_id: res.headers['x-request-id'],
          caller: 'key',
        });
      } finally {
        await sql(primaryUrl, 'alter table read_positions_away rename to read_positions');
      }
    } finally {
      primary?.setDown(false);
      await c.close();
    }
  }, 60_000);
});
