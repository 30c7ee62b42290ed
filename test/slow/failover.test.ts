// Failover without an operator (issue 30), against the project's own primary and synchronous
// standby (scripts/failover-clusters.sh, ports 5451 and 5452; .ci/run brings them up). PostgreSQL
// only. With FAILOVER_TESTS_REQUIRED=1 (CI) it fails instead of skipping when the pair is missing.
//
// 1. A primary made read-only (ALTER SYSTEM default_transaction_read_only): writes 503
//    DATABASE_UNAVAILABLE, never 500, nothing written; /ready 503 `read-only`; back when switched off.
// 2. Two service instances on the multi-host URL under a write load (report creations, queue
//    claims and completions, training injections to a realtime subscriber); the primary is stopped
//    with `-m immediate` and the standby promoted. The figures are printed as one `failover:` line.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { seedActions } from '../../bench/lib/queue-seed.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from '../helpers/app.js';
import { ctl, multiHostUrl, pollReady, port, primaryIndex, Recorder, repairPair, seedTrainer, sendOnce, setReadOnly, sql, urlAt, usePair } from '../helpers/failover.js';
import { chatId } from '../helpers/identity.js';
import { connect, SECRETS, subscribe } from '../helpers/realtime.js';
import { answering, freePort, startService, type Service } from '../helpers/service-process.js';
import { onPostgres } from '../helpers/stores.js';

// The pair, this file's alone while it runs (usePair).
const available = await usePair(onPostgres);
const hex = () => randomBytes(4).toString('hex');
const report = (id: string) => ({ report_id: id, reporter: chatId(), reported: chatId(), reason: 'Failover', notes: 'n', evidence: 'e' });

describe.runIf(available)('a primary made read-only', () => {
  it('answers writes 503 DATABASE_UNAVAILABLE and /ready 503 read-only, writes nothing, and recovers once writes are allowed again', async () => {
    await repairPair();
    const primary = (await primaryIndex())!;
    const database = `cms_readonly_${hex()}`;
    await sql(urlAt(port(primary)), `create database ${database}`);
    // The multi-host form (a connection checked on connect) and a plain single-host URL.
    const open = (url: string) => createTestApp({ env: { PRODUCTION_DATABASE_URL: url }, openDb: { production: async () => openPostgres({ connectionString: url, max: 3 }) } });
    const apps: TestApp[] = [await open(multiHostUrl(database)), await open(urlAt(port(primary), database))];
    const create = (t: TestApp, id: string) => t.app.inject({ method: 'POST', url: '/reports/create', headers: { authorization: PRODUCTION_KEY }, payload: report(id) });
    const written = async (id: string) => (await sql(urlAt(port(primary), database), 'select 1 from reports where report_id = $1', [id])).length;
    try {
      for (const t of apps) expect((await create(t, `RO-${hex()}`)).statusCode).toBe(201);
      await setReadOnly(port(primary), true);
      for (const t of apps) {
        // The reload reaches each session at its next statement: until then a write may still pass.
        let answer = await create(t, `RO-${hex()}`);
        for (let i = 0; answer.statusCode === 201 && i < 50; i++) answer = await create(t, `RO-${hex()}`);
        const id = `RO-${hex()}`;
        answer = await create(t, id);
        expect(answer.statusCode).toBe(503);
        expect(answer.json()).toEqual({ success: false, error: expect.stringMatching(/^Database unavailable: /), code: 'DATABASE_UNAVAILABLE' });
        expect(await written(id)).toBe(0);
        const ready = await t.app.inject({ method: 'GET', url: '/ready' });
        expect(ready.statusCode).toBe(503);
        expect(ready.json()).toMatchObject({ success: false, code: 'NOT_READY', error: 'Not ready: production read-only', environments: { production: 'read-only', demo: 'ok' } });
      }
      await setReadOnly(port(primary), false);
      for (const t of apps) {
        const id = `RO-${hex()}`;
        await vi.waitFor(async () => expect((await create(t, id)).statusCode).toBe(201), { timeout: 10_000, interval: 100 });
        expect(await written(id)).toBe(1);
        expect((await t.app.inject({ method: 'GET', url: '/ready' })).json()).toMatchObject({ success: true, environments: { production: 'ok', demo: 'ok' } });
      }
    } finally {
      await setReadOnly(port(primary), false);
      for (const t of apps) await t.close();
      await sql(urlAt(port(primary)), `drop database if exists ${database} with (force)`);
    }
  }, 60_000);
});

const KEY = 'failover-production-key-00000000';
const ITEMS = 600;
const STALE_SECONDS = 3;
const run = promisify(execFile);

describe.runIf(available)('failover to the synchronous standby under load', () => {
  const services: Service[] = [];
  const names = { production: `cms_failover_${hex()}`, demo: `cms_failover_demo_${hex()}` };
  let env: Record<string, string>;
  let oldPrimary: number;

  beforeAll(async () => {
    await repairPair();
    oldPrimary = (await primaryIndex())!;
    for (const name of Object.values(names)) await sql(urlAt(port(oldPrimary)), `create database ${name}`);
    env = {
      PRODUCTION_DATABASE_URL: multiHostUrl(names.production),
      DEMO_DATABASE_URL: multiHostUrl(names.demo),
      PRODUCTION_API_KEY: KEY,
      DEMO_API_KEY: `${KEY}-demo`,
      ...SECRETS,
      QUEUE_STALE_TIMEOUT_SECONDS: String(STALE_SECONDS),
      AUDIT_SEAL_INTERVAL_SECONDS: '0.5',
      DATABASE_POOL_SIZE: '4',
      LOG_LEVEL: 'warn',
      DATA_DIR: ':memory:',
    };
    for (let i = 0; i < 2; i++) {
      const service = startService({ ...env, PORT: String(await freePort()) });
      services.push(service);
      await answering(service);
    }
  }, 120_000);

  afterAll(async () => {
    for (const service of services) service.child.kill('SIGKILL');
    await Promise.all(services.map((s) => s.exited));
    const primary = await primaryIndex();
    if (primary !== undefined) for (const name of Object.values(names)) await sql(urlAt(port(primary)), `drop database if exists ${name} with (force)`).catch(() => undefined);
    // The old primary becomes the new one's standby (a new base backup): CI can run this again.
    await repairPair();
  }, 120_000);

  it('loses no acknowledged write, answers 503 (never 500) until the standby is promoted, then writes again within 5 s', async () => {
    const [a, b] = services as [Service, Service];
    const db = openPostgres({ connectionString: env.PRODUCTION_DATABASE_URL!, max: 2 });
    const { trainer, trainerId, sessionId } = await seedTrainer(db, a.url);
    const ids = await seedActions(db, ITEMS, 'FO');
    await db.close();
    const rtToken = ((await (await fetch(`${a.url}/training/realtime-token`, { headers: trainer })).json()) as { token: string }).token;
    const subscriber = await subscribe(connect(a.url), `training:user:${trainerId}`, rtToken);
    expect(subscriber.statuses).toContain('SUBSCRIBED');

    const recorder = new Recorder();
    const ready = pollReady([a.url, b.url]);
    const instance = (n: number) => (n % 2 === 0 ? a : b).url;
    const key = { authorization: KEY, 'content-type': 'application/json' };
    let loading = true;
    let n = 0;
    // The bot as the README's: each create, claim and completion sent with a key of its own and
    // sent again with it after a 503 or a lost answer (sendOnce), to either instance.
    const intended: string[] = [];
    const creator = async (w: number) => {
      while (loading) {
        const id = `FO-R-${w}-${++n}`;
        intended.push(id);
        await sendOnce(recorder, 'create', `${instance(n)}/reports/create`, { method: 'POST', headers: key, body: JSON.stringify(report(id)) }, id);
        await sleep(20);
      }
    };
    const completeOnce = async (w: number, id: number) => {
      for (let attempt = 0; ; attempt++) {
        const answer = await sendOnce(recorder, 'complete', `${instance(w + attempt)}/actions/${id}/complete`, { method: 'POST', headers: key, body: JSON.stringify({ result: 'success', note: `worker ${w}` }) }, id);
        if (answer?.status === 200 || (answer?.status === 409 && answer.code === 'ACTION_ALREADY_COMPLETED')) return;
        await sleep(100);
      }
    };
    const completed = new Set<number>();
    const worker = async (w: number, until: () => boolean) => {
      for (let i = w; !until(); i++) {
        const answer = await sendOnce(recorder, 'claim', `${instance(i)}/actions/next`, { headers: { authorization: KEY } });
        if (answer === undefined) continue;
        if (answer.status === 200) {
          const id = answer.body.action.action_id as number;
          await completeOnce(w, id);
          completed.add(id);
        }
        await sleep(answer.status === 204 ? 100 : 50);
      }
    };
    const injector = async () => {
      while (loading) {
        const answer = await recorder.send('inject', `${instance(++n)}/training/sessions/${sessionId}/inject`, { method: 'POST', headers: { ...trainer, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'custom_message', content: `m${n}` }) });
        if (answer.status === 201) answer.id = answer.body.injection.id;
        await sleep(150);
      }
    };
    const load = [0, 1, 2].map(creator).concat([0, 1, 2, 3].map((w) => worker(w, () => !loading)), injector());

    await sleep(2_000);
    // A bot that dies with the primary: three items claimed and never completed.
    const orphans: number[] = [];
    for (let i = 0; i < 3; i++) orphans.push((await recorder.send('claim', `${a.url}/actions/next`, { headers: { authorization: KEY } })).body.action.action_id);
    const standby = 1 - oldPrimary;
    await ctl(oldPrimary, 'stop', '-m', 'immediate');
    // pg_ctl returns once the server has exited: a write that starts from now on cannot reach it.
    const stopped = performance.now();
    await sleep(1_000); // the failure noticed
    await ctl(standby, 'promote');
    const promoted = performance.now();
    // No standby left to wait for: commits on the new primary must not hang (a failover manager's step).
    await sql(urlAt(port(standby)), "alter system set synchronous_standby_names = ''");
    await sql(urlAt(port(standby)), 'select pg_reload_conf()');
    await vi.waitFor(() => expect(recorder.ok().some((x) => x.start >= stopped)).toBe(true), { timeout: 15_000, interval: 50 });
    await sleep(STALE_SECONDS * 1000 + 3_000); // the sweep hands the orphans out again
    loading = false;
    await Promise.all(load);
    const drainUntil = performance.now() + 30_000;
    await Promise.all([0, 1, 2, 3].map((w) => worker(w, () => completed.size >= ITEMS || performance.now() > drainUntil)));
    await ready.stop();

    const newPrimary = urlAt(port(standby), names.production);
    const firstOk = Math.min(...recorder.ok().filter((x) => x.start >= stopped).map((x) => x.end));
    const others5xx = recorder.answers.filter((x) => x.status >= 500 && x.status !== 503);
    const unavailable = recorder.answers.filter((x) => x.status === 503);
    const created = recorder.ok('create').map((x) => x.id as string);
    const found = await sql(newPrimary, 'select report_id from reports where report_id = any($1::text[])', [created]);
    const injected = recorder.ok('inject').map((x) => x.id as number);
    const injections = await sql(newPrimary, 'select id from training_injections where id = any($1::bigint[])', [injected]);
    const completions = await sql<{ id: string; n: number }>(newPrimary, "select (data->>'action_id') as id, count(*)::int as n from events where type = 'queue.action_completed' group by 1");
    const requeued = await sql(newPrimary, "select distinct (data->>'action_id')::bigint as id from events where type = 'queue.action_requeued'");
    const figures = {
      writes_2xx: recorder.ok().length,
      writes_lost: created.length - found.length + injected.length - injections.length,
      s_stop_to_first_write: +((firstOk - stopped) / 1000).toFixed(2),
      s_promotion_to_first_write: +((firstOk - promoted) / 1000).toFixed(2),
      http_503: unavailable.length,
      http_5xx_other: others5xx.length,
      ready_503_read_only: ready.polls.filter((p) => p.status === 503 && p.production === 'read-only').length,
      orphans_handed_out_again: orphans.filter((o) => requeued.some((r) => Number(r.id) === o)).length,
      creates_meant: intended.length,
      replayed: recorder.answers.filter((x) => x.replayed).length,
    };
    console.log(`failover: ${JSON.stringify(figures)}`);

    expect(others5xx.map((x) => `${x.kind} ${x.status} ${JSON.stringify(x.body)}`)).toEqual([]);
    expect(unavailable.every((x) => x.code === 'DATABASE_UNAVAILABLE')).toBe(true);
    expect(
      recorder.answers.filter((x) => x.status >= 400 && x.status < 500 && x.code !== 'ACTION_ALREADY_COMPLETED' && x.code !== 'IDEMPOTENCY_KEY_IN_USE').map((x) => `${x.kind} ${x.status} ${x.code}`),
    ).toEqual([]);
    // Exactly once for the retrying bot: every create it meant is there, made once.
    const made = await sql<{ report_id: string; n: number }>(newPrimary, "select report_id, count(*)::int as n from events where type = 'report.created' and report_id = any($1::text[]) group by 1", [intended]);
    expect({ meant: intended.length, made: made.length, twice: made.filter((m) => m.n !== 1) }).toEqual({ meant: intended.length, made: intended.length, twice: [] });
    // RPO 0: every write answered 2xx, before, during and after, is on the new primary.
    expect(found.length).toBe(created.length);
    expect(injections.length).toBe(injected.length);
    expect(recorder.ok().filter((x) => x.start < stopped).length).toBeGreaterThan(0);
    expect(figures.s_promotion_to_first_write).toBeLessThanOrEqual(5);
    // While nothing was writable, GET /ready said so.
    expect(ready.polls.filter((p) => p.at > stopped && p.at < firstOk && p.status === 503 && p.production === 'read-only').length).toBeGreaterThan(0);
    expect(ready.polls.filter((p) => p.status !== 200 && p.status !== 503)).toEqual([]);
    for (const s of services) expect(((await (await fetch(`${s.url}/ready`)).json()) as { environments: unknown }).environments).toEqual({ production: 'ok', demo: 'ok' });
    // Exactly once: every item succeeded with one completion; the orphans were handed out again by the sweep.
    const [states] = await sql(newPrimary, "select count(*) filter (where status = 'success')::int as ok, count(*)::int as n from report_actions where action_id = any($1::bigint[])", [ids]);
    expect(states).toEqual({ ok: ITEMS, n: ITEMS });
    expect(completions.filter((c) => c.n !== 1)).toEqual([]);
    expect(completions.length).toBe(ITEMS);
    expect(figures.orphans_handed_out_again).toBe(orphans.length);
    const okCompletions = recorder.answers.filter((x) => x.kind === 'complete' && x.status === 200).map((x) => x.id);
    expect(okCompletions.filter((id, i) => okCompletions.indexOf(id) !== i)).toEqual([]);

    // The chain verifies on the new primary, and sealing goes on there.
    const verify = await run(process.execPath, [join(import.meta.dirname, '../../dist/src/cli.js'), 'verify-audit', '--env', 'production'], { env: { PATH: process.env.PATH ?? '', ...env } });
    expect(verify.stdout).toMatch(/^production: audit chain verifies: \d+ rows/);
    await vi.waitFor(async () => {
      const [c] = await sql(newPrimary, 'select (select count(*) from audit_chain)::int as sealed, ((select count(*) from events) + (select count(*) from audit_log))::int as rows');
      expect(c!.sealed).toBe(c!.rows);
    }, { timeout: 20_000, interval: 250 });

    // The subscriber hears writes made after the failover (through either instance).
    for (let i = 0; i < 4; i++) {
      const answer = await recorder.send('inject', `${instance(i)}/training/sessions/${sessionId}/inject`, { method: 'POST', headers: { ...trainer, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'custom_message', content: `after ${i}` }) });
      expect(answer.status).toBe(201);
      await vi.waitFor(() => expect(subscriber.received.some((r) => (r.payload.event.data as { injection_id?: number }).injection_id === answer.body.injection.id)).toBe(true), { timeout: 10_000, interval: 50 });
    }
    subscriber.client.disconnect();
  }, 120_000);
});
