// A read replica left on the old timeline by a failover (issue 40, point 3): the failover pair's
// primary P with a third cluster C as an asynchronous read replica of it. The pair's standby S is
// cut off from P, P acknowledges creates that only C receives (asynchronous for the moment, as a
// failover manager sets it when its standby goes), then P stops and S is promoted: C keeps the
// rows the new primary never received, on a timeline the new primary left, and has replayed
// further (in WAL positions) than the new primary has written.
//
// The service must not read from C: a caller's own create on the new primary is there when it
// reads it, and a create the new primary never received is not. PostgreSQL only; with
// FAILOVER_TESTS_REQUIRED=1 (CI) it fails instead of skipping when the pair is missing.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ctl, port, sql, urlAt, usePair } from '../helpers/failover.js';
import { chatId } from '../helpers/identity.js';
import { cleanUp, PAIR_KEY, promote, serviceOnPair } from '../helpers/pair-service.js';
import { freePort, type Service } from '../helpers/service-process.js';
import { onPostgres } from '../helpers/stores.js';

const available = await usePair(onPostgres);
const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, '../../scripts/standby-cluster.sh');
const REPLICA = 'cms_failover_c';
const REPLICA_PORT = Number(process.env.FAILOVER_C_PORT ?? 5453);
const hex = () => randomBytes(4).toString('hex');

describe.runIf(available)('a read replica left on the old timeline by a failover', () => {
  let service: Service;
  let metricsPort: number;
  const database = `cms_timeline_${hex()}`;
  let oldPrimary: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    ({ service, oldPrimary } = await serviceOnPair(
      database,
      { PRODUCTION_DATABASE_REPLICA_URLS: urlAt(REPLICA_PORT, database), METRICS_PORT: String(metricsPort) },
      async (primaryPort) => void (await run(SCRIPT, [REPLICA, String(REPLICA_PORT), String(primaryPort)], { timeout: 120_000 })),
    ));
  }, 240_000);

  afterAll(async () => {
    await ctl(oldPrimary, 'stop', '-m', 'immediate').catch(() => undefined);
    await run(SCRIPT, ['--drop', REPLICA], { timeout: 60_000 }).catch(() => undefined);
    await cleanUp(service, database);
  }, 240_000);

  const headers = { authorization: PAIR_KEY, 'content-type': 'application/json' };
  const create = (id: string) =>
    fetch(`${service.url}/reports/create`, { method: 'POST', headers, body: JSON.stringify({ report_id: id, reporter: chatId(), reported: chatId(), reason: 'Timeline', notes: 'n', evidence: 'e' }), signal: AbortSignal.timeout(15_000) });
  const read = async (id: string) => (await fetch(`${service.url}/reports/${id}`, { headers, signal: AbortSignal.timeout(15_000) })).status;
  /** A production figure of the service's metrics, by its name and labels after the environment's. */
  const metric = async (name: string, labels = '') => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{environment="production"${labels}`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  };
  const replicaReads = async () => (await metric('cms_db_reads_total', ',route="replica"')) ?? 0;

  it("serves no read from it: the caller's create on the new primary is found, a create the new primary never received is not", async () => {
    const primaryUrl = urlAt(port(oldPrimary));
    const standby = 1 - oldPrimary;
    // Before the failover the replica serves reads.
    const before = `TL-${hex()}`;
    expect((await create(before)).status).toBe(201);
    for (let i = 0; i < 100 && (await replicaReads()) === 0; i++) {
      expect(await read(before)).toBe(200);
      await sleep(50);
    }
    expect(await replicaReads()).toBeGreaterThan(0);

    // S cut off from P; P commits without waiting for it.
    await sql(urlAt(port(standby)), "alter system set primary_conninfo = ''");
    await sql(urlAt(port(standby)), 'select pg_reload_conf()');
    for (let i = 0; i < 100 && (await sql(primaryUrl, "select 1 from pg_stat_replication where application_name not like '%cms_failover_c'")).length > 0; i++) await sleep(100);
    await sql(primaryUrl, "alter system set synchronous_standby_names = ''");
    await sql(primaryUrl, 'select pg_reload_conf()');
    // Creates only P and C have, and two WAL switches: C replays further than S will write for a while.
    const lost = `TL-${hex()}`;
    expect((await create(lost)).status).toBe(201);
    await sql(primaryUrl, 'select pg_switch_wal()');
    expect((await create(`TL-${hex()}`)).status).toBe(201);
    await sql(primaryUrl, 'select pg_switch_wal()');
    expect((await create(`TL-${hex()}`)).status).toBe(201);
    const lsn = (await sql(primaryUrl, 'select pg_current_wal_lsn()::text as lsn'))[0]!.lsn as string;
    for (let i = 0; i < 100; i++) {
      const [row] = await sql(urlAt(REPLICA_PORT), 'select pg_last_wal_replay_lsn() >= $1::pg_lsn as caught_up', [lsn]);
      if (row?.caught_up) break;
      await sleep(100);
    }
    expect(await sql(urlAt(port(standby), database), 'select 1 from reports where report_id = $1', [lost])).toHaveLength(0);

    // P gone, S promoted: the failover.
    await ctl(oldPrimary, 'stop', '-m', 'immediate');
    await promote(standby);
    const after = `TL-${hex()}`;
    let status = 0;
    for (let i = 0; i < 60 && status !== 201; i++) {
      status = await create(after).then((res) => res.status).catch(() => 0);
      if (status !== 201) await sleep(250);
    }
    expect(status).toBe(201);
    const readsBefore = await replicaReads();
    // Reads as a caller makes them right after its write, then a while later.
    for (let i = 0; i < 10; i++) {
      expect(await read(after)).toBe(200);
      expect(await read(lost)).toBe(404);
      expect(await read(before)).toBe(200);
      await sleep(100);
    }
    expect(await replicaReads()).toBe(readsBefore);
    expect(await metric('cms_db_replica_serving')).toBe(0);
  }, 120_000);
});
