// The audit hash chain across processes (issue 21): the service's checkpoints in its log at
// startup and shutdown, `npm run cli -- verify-audit` as operators run it (dist/src/cli.js; `npm
// run build` first), and a sealer killed mid-batch. Two instances writing for 30 s on PostgreSQL
// are test/audit-chain-two-instances.test.ts.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sealAvailable } from '../src/platform/audit-chain/seal.js';
import { pendingRows, verifyChain } from '../src/platform/audit-chain/verify.js';
import { migrate } from '../src/platform/db/migrate.js';
import { openPglite } from '../src/platform/db/pglite.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import { recordEvent } from '../src/platform/events.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn } from './helpers/identity.js';
import { freePort, NODE_FLAGS, startService, withServiceDatabases } from './helpers/service-process.js';
import { createTestDatabase, onPostgres, prepareDataDir, storeName, type TestDatabase } from './helpers/stores.js';

const DIST = join(import.meta.dirname, '../dist/src');
const KEY = 'audit-chain-key-0123456789';
/** How long a test waits for sealing that a write transaction elsewhere on a shared PostgreSQL server may hold back. */
const SHARED_SERVER_WAIT_MS = 45_000;
const count = async (db: Db, table: string) => (await db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;

let dataDir: string;
const databases: TestDatabase[] = [];
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cms-chain-'));
});
afterAll(async () => {
  await Promise.all(databases.map((d) => d.drop()));
  await rm(dataDir, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...NODE_FLAGS, join(DIST, 'cli.js'), ...args], { env: { PATH: process.env.PATH ?? '', ...env }, cwd: dataDir }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The production database of `env` while no service holds it. */
async function openProduction(env: Record<string, string>): Promise<Db> {
  return env.PRODUCTION_DATABASE_URL ? openPostgres({ connectionString: env.PRODUCTION_DATABASE_DIRECT_URL ?? env.PRODUCTION_DATABASE_URL, max: 2 }) : openPglite({ dataDir: join(env.DATA_DIR!, 'production') });
}

describe(`checkpoints and verify-audit on ${storeName}`, () => {
  it('logs the head at startup and shutdown; verify-audit agrees, proves it extends the startup checkpoint, and names an edited row', async () => {
    const env = await withServiceDatabases({ DATA_DIR: await prepareDataDir(join(dataDir, 'svc')), LOG_LEVEL: 'info', PRODUCTION_API_KEY: KEY, DEMO_API_KEY: `demo-${KEY}`, AUDIT_SEAL_INTERVAL_SECONDS: '0.5' }, databases);
    const service = startService({ ...env, PORT: String(await freePort()) });
    await service.ready;
    const checkpoint = (when: string) =>
      service.logs.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { environment?: string; audit_checkpoint?: { rows: number; head_hash: string; when: string } })
        .find((l) => l.environment === 'production' && l.audit_checkpoint?.when === when)?.audit_checkpoint;
    const atStart = checkpoint('startup');
    expect(atStart).toEqual({ rows: expect.any(Number), head_hash: expect.stringMatching(/^[0-9a-f]{64}$/), when: 'startup' });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${service.url}/reports/create`, {
        method: 'POST',
        headers: { authorization: KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ report_id: `CHAIN-${i}`, reporter: chatId(), reported: chatId(), reason: 'Spam', notes: 'n', evidence: 'e' }),
      });
      expect(res.status).toBe(201);
    }
    if (env.PRODUCTION_DATABASE_URL) {
      // On a shared PostgreSQL server a write transaction of another test file holds sealing back
      // (transaction ids are server-wide): let the running service seal the three first, as it
      // will once that transaction ends. The embedded store has no such neighbour.
      const db = await openProduction(env);
      try {
        await vi.waitFor(async () => expect(await count(db, 'audit_chain')).toBe((await count(db, 'events')) + (await count(db, 'audit_log'))), { timeout: SHARED_SERVER_WAIT_MS, interval: 50 });
      } finally {
        await db.close();
      }
    }
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const atStop = checkpoint('shutdown');
    expect(atStop!.rows).toBe(atStart!.rows + 3);

    const ok = await cli(['verify-audit', '--env', 'production'], env);
    expect(ok, ok.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toMatch(new RegExp(`^production: audit chain verifies: ${atStop!.rows} rows, head ${atStop!.head_hash} \\(\\d+\\.\\d s\\)\\n$`));
    const extends_ = await cli(['verify-audit', '--env', 'production', '--against', atStart!.head_hash], env);
    expect(extends_.code).toBe(0);
    expect(extends_.stdout).toContain(`production: extends checkpoint ${atStart!.head_hash} (at ${atStart!.rows} rows)`);
    expect((await cli(['verify-audit', '--env', 'production', '--against', 'abc'], env)).code).toBe(2);

    const db = await openProduction(env);
    let victim: number;
    try {
      victim = (await db.query<{ id: number }>("select id from events where report_id = 'CHAIN-1' order by id limit 1")).rows[0]!.id;
      await db.query(`update events set data = '{"edited": true}' where id = $1::bigint`, [victim]);
      expect((await db.query('select ok from audit_verifications order by id')).rows).toEqual([{ ok: true }, { ok: true }]);
    } finally {
      await db.close();
    }
    const bad = await cli(['verify-audit', '--env', 'production'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(new RegExp(`^production: audit chain does NOT verify: events row ${victim} \\(position \\d+\\): its content does not match its seal \\(edited\\)`));
    const after = await openProduction(env);
    try {
      expect((await after.query('select ok, problem from audit_verifications order by id desc limit 1')).rows[0]).toEqual({ ok: false, problem: expect.stringContaining(`events row ${victim}`) });
    } finally {
      await after.close();
    }
  }, 120_000);
});

describe(`a sealer killed mid-batch on ${storeName}`, () => {
  it('leaves no seal of its batch; the next sealer resumes and the chain verifies', async () => {
    let url: string | undefined;
    const folder = join(await prepareDataDir(dataDir, ['killed']), 'killed');
    const open = async () => (url ? openPostgres({ connectionString: url, max: 2 }) : openPglite({ dataDir: folder }));
    if (onPostgres) {
      const d = await createTestDatabase();
      databases.push(d);
      url = d.url;
    }
    let db = await open();
    await migrate(db);
    // Everything sealed first. On a shared server another file's write transaction holds the mark
    // back until it ends (transaction ids are server-wide): a bulk load of a million rows in
    // test/slow/metrics-scale.test.ts takes tens of seconds while other suites load the machine.
    await vi.waitFor(async () => expect((await sealAvailable(db), await pendingRows(db))).toBe(0), { timeout: SHARED_SERVER_WAIT_MS, interval: 50 });
    const sealedBefore = await count(db, 'audit_chain');
    for (let i = 0; i < 30; i++) await db.transaction((tx) => recordEvent(tx, { type: 'report.updated', actor: { kind: 'system' }, correlationId: `k-${i}` }));
    // The killed sealer must find them sealable: every transaction that could still commit an
    // earlier row has ended (on a shared server, another file's may be running a while).
    const { rows: [last] } = await db.query<{ tx: string }>('select max(sealing_tx)::text as tx from events');
    const sealable = async () => (await db.query<{ ok: boolean }>('select pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8 as ok', [last!.tx])).rows[0]!.ok;
    await vi.waitFor(async () => expect(await sealable()).toBe(true), { timeout: SHARED_SERVER_WAIT_MS, interval: 50 });
    if (!url) await db.close();

    // A sealer in its own process that stops between writing its batch of seals and committing.
    const script = `
      const { sealBatch } = await import(${JSON.stringify(join(DIST, 'platform/audit-chain/seal.js'))});
      const db = ${url
        ? `(await import(${JSON.stringify(join(DIST, 'platform/db/postgres.js'))})).openPostgres({ connectionString: ${JSON.stringify(url)}, max: 1 })`
        : `await (await import(${JSON.stringify(join(DIST, 'platform/db/pglite.js'))})).openPglite({ dataDir: ${JSON.stringify(folder)} })`};
      const hanging = { ...db, transaction: (fn) => db.transaction((tx) => fn(new Proxy(tx, { get(target, prop) {
        if (prop !== 'query') return target[prop]?.bind?.(target) ?? target[prop];
        return async (text, values, options) => {
          const result = await target.query(text, values, options);
          if (text.includes('insert into audit_chain')) { process.stdout.write('inserted\\n'); await new Promise(() => {}); }
          return result;
        };
      } }))) };
      await sealBatch(hanging, 10);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => c.toString().includes('inserted') && resolve());
      child.on('exit', (code) => reject(new Error(`sealer exited ${code} before its insert: ${stderr}`)));
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;

    if (!url) db = await open();
    try {
      const v = await verifyChain(db);
      expect(v).toMatchObject({ ok: true, rows: sealedBefore, pending: 30 });
      expect(await count(db, 'audit_chain')).toBe(sealedBefore);
      // A write transaction elsewhere on a shared server may hold the mark back a moment.
      let resumed = 0;
      for (const deadline = Date.now() + SHARED_SERVER_WAIT_MS; resumed < 30 && Date.now() < deadline; ) resumed += (await sealAvailable(db)).sealed;
      expect(resumed).toBe(30);
      expect(await verifyChain(db)).toMatchObject({ ok: true, rows: sealedBefore + 30, pending: 0 });
    } finally {
      await db.close();
    }
  }, 3 * SHARED_SERVER_WAIT_MS);
});
