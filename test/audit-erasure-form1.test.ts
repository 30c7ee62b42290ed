// Rows sealed in form 1, by the release before (issue 32, item 3): they keep verifying; an
// erasure checks each against its form-1 seal and seals it again in form 3 first; the sealer seals
// the rest again in the background, after which a checkpoint pins them. And verify-audit's CLI
// prints the rows erased by reference. On both stores.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SealMismatchError } from '../src/platform/audit-chain/erase.js';
import { sealAvailable } from '../src/platform/audit-chain/seal.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { migrate } from '../src/platform/db/migrate.js';
import { openPglite } from '../src/platform/db/pglite.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import { CLEAR_CHAIN, erasureFixture, PERSON } from './helpers/audit-erasure.js';
import { NODE_FLAGS, withServiceDatabases } from './helpers/service-process.js';
import { createTestDatabase, prepareDataDir, storeName, type TestDatabase } from './helpers/stores.js';

let d: TestDatabase;
let db: Db;
beforeAll(async () => {
  d = await createTestDatabase();
  db = d.db;
});
afterAll(() => d.drop());
afterEach(() => db.exec(CLEAR_CHAIN));
const { plant, sealed, sealInForm1, erasePerson, eventOf, positionOf, everything, edited, forgeReseal } = erasureFixture(() => db);

describe(`rows sealed in form 1 (the release before), on ${storeName}`, () => {
  it('keep verifying; an erasure checks each against its form-1 seal, re-seals it in form 3 and erases it; it verifies after', async () => {
    await plant();
    await sealInForm1();
    const checkpoint = await verifyChain(db);
    expect(checkpoint).toMatchObject({ ok: true, rows: 9, pending: 0, erased: [] });
    expect(await erasePerson()).toEqual({ events: 3, audit_log: 3 });
    expect((await db.query('select form, count(*)::int as n from audit_chain group by form order by form')).rows).toEqual([{ form: 1, n: 9 }, { form: 3, n: 6 }]);
    expect(await verifyChain(db)).toMatchObject({ ok: true, rows: 15, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
    expect(await verifyChain(db, { against: checkpoint.head })).toMatchObject({ ok: true, checkpointAt: 9 });
    expect(await everything()).not.toContain(PERSON);
    // The sealer goes on after them in form 3 (the erasure's record first), and seals the 3 form-1 rows left in form 3 too.
    await plant(1);
    expect(await sealed()).toMatchObject({ rows: 22, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
    expect((await db.query('select count(*)::int as n from audit_chain where form = 1 and (source, row_id) not in (select source, row_id from audit_chain where form = 3)')).rows).toEqual([{ n: 0 }]);
  });

  it('a form-1 row edited before the erasure: the erasure is refused and changes nothing', async () => {
    await plant(1);
    await sealInForm1();
    const created = await eventOf('report.created');
    await db.query(`update events set report_id = 'R-9' where id = $1::bigint`, [created]);
    await expect(erasePerson()).rejects.toThrow(SealMismatchError);
    expect(await db.query('select count(*)::int as n from audit_chain where form <> 1')).toMatchObject({ rows: [{ n: 0 }] });
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'events', id: created, position: await positionOf('events', created, 1) });
  });

  it('a form-1 row edited, then erased in form 3: the form-3 seal names it', async () => {
    await plant(1);
    await sealInForm1();
    await erasePerson();
    const created = await eventOf('report.created');
    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [created]);
    await edited('events', created);
  });

  it('a form-1 row edited with a forged re-seal appended after the checkpoint: not caught (docs/decisions.md)', async () => {
    await plant(1);
    await sealInForm1();
    const checkpoint = await verifyChain(db);
    const created = await eventOf('report.created');
    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [created]);
    expect((await verifyChain(db)).problem).toMatchObject({ kind: 'edited', id: created });
    await forgeReseal('events', created);
    // The chain keeps no trace of the row's content before the re-seal but its form-1 hash, which
    // nothing can check once a field is erased: the forgery passes, the checkpoint still extended.
    expect(await verifyChain(db, { against: checkpoint.head })).toMatchObject({ ok: true, checkpointAt: checkpoint.rows, rows: checkpoint.rows + 1 });
  });

  it("after the sealer's pass re-sealed them in form 3, the same forgery is caught against a checkpoint taken after it", async () => {
    await plant(1);
    await sealInForm1();
    const created = await eventOf('report.created');
    const status = await eventOf('report.status_changed');
    // A row edited before the pass is passed over, not laundered into a new seal: verify names it.
    await db.query(`update events set report_id = 'R-9' where id = $1::bigint`, [status]);
    expect(await sealAvailable(db)).toMatchObject({ sealed: 0, resealed: 2 });
    expect(await sealAvailable(db)).toMatchObject({ sealed: 0, resealed: 0 });
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'events', id: status, position: await positionOf('events', status, 1) });
    await db.query(`update events set report_id = 'R-0' where id = $1::bigint`, [status]);
    const checkpoint = await verifyChain(db);
    expect(checkpoint).toMatchObject({ ok: true, rows: 5 });

    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [created]);
    await edited('events', created);
    // The forger cannot add a second form-3 seal; replacing the real one rewrites the chain.
    await expect(forgeReseal('events', created)).rejects.toThrow();
    const position = await positionOf('events', created);
    await db.query('delete from audit_chain where position = $1::bigint', [position]);
    await db.query('update audit_chain set position = position - 1 where position > $1::bigint', [position]);
    await db.query("delete from audit_seal_salts where source = 'events' and row_id = $1::bigint", [created]);
    await forgeReseal('events', created);
    expect(await verifyChain(db, { against: checkpoint.head })).toMatchObject({ ok: false, problem: { kind: 'checkpoint_not_found' } });
  });
});

describe(`npm run cli -- verify-audit, on ${storeName}`, () => {
  // The built CLI (dist/src/cli.js: `npm run build` first), as operators run it.
  it('prints the rows erased under each reference', async () => {
    const dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-erasure-')));
    const databases: TestDatabase[] = [];
    const saved = db;
    try {
      const env = await withServiceDatabases({ DATA_DIR: dataDir, PRODUCTION_API_KEY: 'erasure-key-0123456789', DEMO_API_KEY: 'demo-erasure-key-0123456789' }, databases);
      db = env.PRODUCTION_DATABASE_URL ? await openPostgres({ connectionString: env.PRODUCTION_DATABASE_DIRECT_URL ?? env.PRODUCTION_DATABASE_URL, max: 2 }) /* migrations need PostgreSQL itself, not a pooler */ : await openPglite({ dataDir: join(dataDir, 'production') });
      try {
        await migrate(db);
        await plant(2);
        await sealed();
        await erasePerson();
      } finally {
        await db.close();
      }
      const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [...NODE_FLAGS, join(import.meta.dirname, '../dist/src/cli.js'), 'verify-audit', '--env', 'production'], { env: { PATH: process.env.PATH ?? '', ...env }, cwd: dataDir }, (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
      });
      expect(out, out.stderr).toMatchObject({ code: 0, stderr: '' });
      // The erasure's own record is written with it, and sealed by the service's next pass.
      expect(out.stdout).toMatch(
        /^production: audit chain verifies: 6 rows, head [0-9a-f]{64} \(\d+\.\d s\)\nproduction: 4 rows erased under reference GDPR-2026-001\nproduction: 1 newer rows are not sealed yet \(the running service seals them within seconds\)\n$/,
      );
    } finally {
      db = saved;
      await Promise.all(databases.map((x) => x.drop()));
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
