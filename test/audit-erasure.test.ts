// The audit chain survives an erasure and still catches tampering (issue 32, item 3): personal
// fields of sealed events and admin audit rows erased through eraseSealedRows verify, with and
// without a checkpoint, counted under the erasure's reference; every other change, and every
// change of a personal field to anything but the marker, fails naming the row, forged erasure
// records included. Rows sealed in form 1 (by the release before) too. On both stores.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eraseSealedRows, loadSealedRows, personalPointers, SealMismatchError, type RowErasure } from '../src/platform/audit-chain/erase.js';
import { chainHash, rowHash, type SealedTable } from '../src/platform/audit-chain/hashes.js';
import { ERASURE_MARKER, pseudonym, pseudonymKey } from '../src/platform/audit-chain/personal-fields.js';
import { sealForm2 } from '../src/platform/audit-chain/form2.js';
import { readHead, sealAvailable } from '../src/platform/audit-chain/seal.js';
import { pendingRows, verifyChain, type Verification } from '../src/platform/audit-chain/verify.js';
import { recordAudit } from '../src/platform/audit.js';
import { migrate } from '../src/platform/db/migrate.js';
import { openPglite } from '../src/platform/db/pglite.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import { recordEvent } from '../src/platform/events.js';
import { withServiceDatabases } from './helpers/service-process.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/stores.js';

const PERSON = '412345678901234567';
const OTHER = '498765432109876543';
const AGENT = '300000000000000001';
const PSEUDONYM = pseudonym(pseudonymKey('a test secret'), PERSON);
const ERASURE = { id: 'ER-1', reference: 'GDPR-2026-001' };
const names = (value: string) => value === PERSON || value.includes('Pat');

let d: TestDatabase;
let db: Db;
beforeAll(async () => {
  d = await createTestDatabase();
  db = d.db;
});
afterAll(() => d.drop());
afterEach(async () => {
  await db.exec("delete from audit_chain; delete from audit_seal_salts; delete from events; delete from audit_log; update audit_chain_state set audit_log_tx = '0', audit_log_id = 0, events_tx = '0', events_id = 0, form1_position = 0");
});

/** Per case: a report naming the person (event), a status change (event), an admin audit row about them. */
async function plant(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) {
    await db.transaction(async (tx) => {
      const actor = { kind: 'agent' as const, chatId: AGENT, name: 'Alice Agent' };
      await recordEvent(tx, {
        type: 'report.created', actor, correlationId: `c-${i}`, reportId: `R-${i}`,
        after: { report_id: `R-${i}`, reporter: PERSON, reported: OTHER, reporter_name: 'Pat Person', reported_name: 'Olive Other', reason: 'Pat says hello', status: 'Open', notes_list: [{ note: 'Pat called', author_chat_id: AGENT }] },
      });
      await recordEvent(tx, { type: 'report.status_changed', actor, correlationId: `c-${i}`, reportId: `R-${i}`, before: { status: 'Open' }, after: { status: 'Pending' }, data: { action: 'claim' } });
      await recordAudit(tx, { actor, action: 'admin.agent_updated', target: PERSON, reason: `Pat asked ${i}`, after: { name: 'Pat Person', clearance_level: 2 }, correlationId: `c-${i}` });
    });
  }
}

async function sealed(): Promise<Verification> {
  const deadline = Date.now() + 20_000;
  while ((await sealAvailable(db), await pendingRows(db)) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const v = await verifyChain(db);
  expect(v, JSON.stringify(v.problem)).toMatchObject({ ok: true, problem: null, pending: 0 });
  return v;
}

/** Seals what is not sealed as the release before did: form 1, inserted without a form. */
async function sealInForm1(): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.exec("set local timezone = 'UTC'");
    const { rows } = await tx.query<{ source: SealedTable; id: number; row: unknown }>(
      `select source, id, row from (
         select 'events' as source, id, sealing_tx, to_jsonb(r) - 'search_text' - 'sealing_tx' as row from events r
         union all select 'audit_log', id, sealing_tx, to_jsonb(r) - 'sealing_tx' from audit_log r) x
        where not exists (select 1 from audit_chain c where c.source = x.source and c.row_id = x.id) order by sealing_tx, source, id`,
    );
    let { rows: position, hash } = await readHead(tx);
    for (const r of rows) {
      const rh = rowHash(r.source, r.row);
      hash = chainHash(hash, ++position, rh);
      await tx.query(`insert into audit_chain (position, source, row_id, row_hash, chain_hash) values ($1::bigint, $2::text, $3::bigint, decode($4::text, 'hex'), decode($5::text, 'hex'))`, [position, r.source, r.id, rh, hash]);
    }
    for (const t of ['events', 'audit_log']) {
      await tx.exec(`update audit_chain_state set ${t}_tx = coalesce((select sealing_tx from ${t} order by sealing_tx desc, id desc limit 1), '0'), ${t}_id = coalesce((select max(id) from ${t}), 0)`);
    }
  });
}

/** The erasure of PERSON from every sealed row, as subject erasure calls it. */
async function erasePerson(): Promise<{ events: number; audit_log: number }> {
  return db.transaction(async (tx) => {
    const requests: RowErasure[] = [];
    for (const source of ['events', 'audit_log'] as const) {
      const ids = (await tx.query<{ id: number }>(`select id from ${source} order by id`)).rows.map((r) => Number(r.id));
      for (const [id, row] of await loadSealedRows(tx, source, ids)) {
        const pointers = personalPointers(source, row, (_key, value) => names(value));
        if (pointers.length > 0) requests.push({ source, id, pointers, chatIdPseudonym: PSEUDONYM });
      }
    }
    return eraseSealedRows(tx, ERASURE, requests);
  });
}

const eventOf = async (type: string, n = 0) => (await db.query<{ id: number }>('select id from events where type = $1::text order by id limit 1 offset $2::int', [type, n])).rows[0]!.id;
const positionOf = async (source: string, id: number, form = 2) =>
  (await db.query<{ position: number }>('select position from audit_chain where source = $1::text and row_id = $2::bigint and form = $3::int', [source, id, form])).rows[0]!.position;
const everything = async () => (await db.query<{ t: string }>("select coalesce(string_agg(to_jsonb(e)::text, ' '), '') || ' ' || (select coalesce(string_agg(to_jsonb(a)::text, ' '), '') from audit_log a) as t from events e")).rows[0]!.t;
const edited = async (source: SealedTable, id: number, field?: string) =>
  expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source, id, position: await positionOf(source, id), ...(field === undefined ? {} : { field }) });

describe(`an erasure on a form-2 chain, on ${storeName}`, () => {
  it('verifies after it, with and without an older checkpoint, and reports the rows erased under the reference', async () => {
    await plant();
    const checkpoint = await sealed();
    const created = await eventOf('report.created');
    const saltBefore = (await db.query<{ s: string }>("select salts->>'/after/reporter_name' as s from audit_seal_salts where source = 'events' and row_id = $1::bigint", [created])).rows[0]!.s;
    expect(saltBefore).toMatch(/^[0-9a-f]{32}$/);

    expect(await erasePerson()).toEqual({ events: 3, audit_log: 3 });
    const v = await verifyChain(db);
    expect(v).toMatchObject({ ok: true, problem: null, rows: checkpoint.rows, head: checkpoint.head, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
    expect(await verifyChain(db, { against: checkpoint.head })).toMatchObject({ ok: true, checkpointAt: checkpoint.rows, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });

    // What was written: the person's fields erased, the rest untouched; no trace of them anywhere.
    const { rows } = await db.query<{ actor_name: string; after: Record<string, unknown> }>('select actor_name, after from events where id = $1::bigint', [created]);
    expect(rows[0]).toEqual({
      actor_name: 'Alice Agent',
      after: { report_id: 'R-0', reporter: PSEUDONYM, reported: OTHER, reporter_name: ERASURE_MARKER, reported_name: 'Olive Other', reason: ERASURE_MARKER, status: 'Open', notes_list: [{ note: ERASURE_MARKER, author_chat_id: AGENT }] },
    });
    const audit = (await db.query('select target, reason, after from audit_log order by id limit 1')).rows[0];
    expect(audit).toEqual({ target: PSEUDONYM, reason: ERASURE_MARKER, after: { name: ERASURE_MARKER, clearance_level: 2 } });
    const text = await everything();
    expect(text).not.toContain(PERSON);
    expect(text).not.toContain('Pat');

    // The erased value's salt is gone from the database; its commitment is kept with the erasure.
    const salts = (await db.query<{ salts: Record<string, string>; erased: Record<string, unknown> }>("select salts, erased from audit_seal_salts where source = 'events' and row_id = $1::bigint", [created])).rows[0]!;
    expect(salts.salts).not.toHaveProperty(['/after/reporter_name']);
    expect(salts.salts).toHaveProperty(['/after/reported_name']);
    expect(salts.erased['/after/reporter_name']).toEqual({ commitment: createHash('sha256').update(Buffer.from(saltBefore, 'hex')).update('Pat Person').digest('hex'), erasure: 'ER-1', reference: 'GDPR-2026-001', value: ERASURE_MARKER });
    expect(salts.erased['/after/reporter']).toMatchObject({ value: PSEUDONYM });
    expect((await db.query<{ n: number }>('select count(*)::int as n from audit_seal_salts where salts::text like $1::text', [`%${saltBefore}%`])).rows[0]!.n).toBe(0);

    // A second erasure changes nothing; rows written after it are sealed and verify too.
    expect(await erasePerson()).toEqual({ events: 0, audit_log: 0 });
    await plant(1);
    expect(await erasePerson()).toEqual({ events: 1, audit_log: 1 }); // not sealed yet: just overwritten
    expect(await sealed()).toMatchObject({ rows: checkpoint.rows + 3, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
  });

  it('refuses a pointer that is not a personal field, and a row that no longer matches its seal', async () => {
    await plant(1);
    await sealed();
    const created = await eventOf('report.created');
    const erase = (pointers: string[]) => db.transaction((tx) => eraseSealedRows(tx, ERASURE, [{ source: 'events', id: created, pointers }]));
    await expect(erase(['/after/status'])).rejects.toThrow('/after/status is not an erasable personal field');
    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [created]);
    await expect(erase(['/after/reporter_name'])).rejects.toThrow(SealMismatchError);
    expect((await db.query('select after->>$2::text as v from events where id = $1::bigint', [created, 'reporter_name'])).rows[0]).toEqual({ v: 'Pat Person' });
  });
});

describe(`tampering after an erasure is still caught, naming the row, on ${storeName}`, () => {
  /** A sealed, erased chain; the first report.created event, erased, is the victim. */
  async function erased(): Promise<number> {
    await plant();
    await sealed();
    await erasePerson();
    expect((await verifyChain(db)).ok).toBe(true);
    return eventOf('report.created', 1);
  }
  const setAfter = (id: number, key: string, value: string) => db.query(`update events set after = jsonb_set(after, $2::text[], to_jsonb($3::text)) where id = $1::bigint`, [id, [key], value]);
  const setErased = (id: number, pointer: string, entry: unknown) =>
    db.query(`update audit_seal_salts set salts = salts - $2::text, erased = jsonb_set(erased, array[$2::text], $3::jsonb) where source = 'events' and row_id = $1::bigint`, [id, pointer, JSON.stringify(entry)]);

  it('a non-personal column, or a non-personal field inside the json, changed', async () => {
    const victim = await erased();
    await db.query(`update events set report_id = 'R-other' where id = $1::bigint`, [victim]);
    await edited('events', victim);
    await db.query(`update events set report_id = 'R-1', after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [victim]);
    await edited('events', victim);
  });

  it('a personal field changed to anything other than the marker: erased or not', async () => {
    const victim = await erased();
    await setAfter(victim, 'reporter_name', 'Someone Else');
    await edited('events', victim, '/after/reporter_name'); // erased: no salt, and not the marker
    await setAfter(victim, 'reporter_name', ERASURE_MARKER);
    expect((await verifyChain(db)).ok).toBe(true);
    await setAfter(victim, 'reported_name', 'Mallory');
    await edited('events', victim); // not erased: its salt's commitment does not match
    // A chat id erased to another pseudonym than the one it was (or to a real chat id) is not accepted either.
    await setAfter(victim, 'reported_name', 'Olive Other');
    await setAfter(victim, 'reporter', '499999999999999999');
    await edited('events', victim, '/after/reporter');
    await setAfter(victim, 'reporter', pseudonym(pseudonymKey('a test secret'), OTHER));
    await edited('events', victim, '/after/reporter');
  });

  it('a personal field set to the marker without an erased entry, with its salt or without', async () => {
    const victim = await erased();
    await setAfter(victim, 'reported_name', ERASURE_MARKER);
    await edited('events', victim);
    await db.query(`update audit_seal_salts set salts = salts - '/after/reported_name' where source = 'events' and row_id = $1::bigint`, [victim]);
    await edited('events', victim, '/after/reported_name');
  });

  it('the same with a forged erased entry carrying a wrong commitment', async () => {
    const victim = await erased();
    await setAfter(victim, 'reported_name', ERASURE_MARKER);
    await setErased(victim, '/after/reported_name', { commitment: randomBytes(32).toString('hex'), erasure: 'forged', reference: 'GDPR-2026-001', value: ERASURE_MARKER });
    await edited('events', victim);
  });

  it('a non-personal field set to the marker with a forged erased entry', async () => {
    const victim = await erased();
    await setAfter(victim, 'status', ERASURE_MARKER);
    await setErased(victim, '/after/status', { commitment: randomBytes(32).toString('hex'), erasure: 'forged', reference: 'forged', value: ERASURE_MARKER });
    await edited('events', victim);
  });

  it('the limit, as documented: a forged erasure with the right commitment removes personal data and passes', async () => {
    const victim = await erased();
    const salt = (await db.query<{ s: string }>("select salts->>'/after/reported_name' as s from audit_seal_salts where source = 'events' and row_id = $1::bigint", [victim])).rows[0]!.s;
    await setAfter(victim, 'reported_name', ERASURE_MARKER);
    await setErased(victim, '/after/reported_name', { commitment: createHash('sha256').update(Buffer.from(salt, 'hex')).update('Olive Other').digest('hex'), erasure: 'forged', reference: 'FORGED', value: ERASURE_MARKER });
    expect(await verifyChain(db)).toMatchObject({ ok: true, erased: [{ reference: 'FORGED', rows: 1 }, { reference: 'GDPR-2026-001', rows: 6 }] });
  });
});

describe(`rows sealed in form 1 (the release before), on ${storeName}`, () => {
  it('keep verifying; an erasure checks each against its form-1 seal, re-seals it in form 2 and erases it; it verifies after', async () => {
    await plant();
    await sealInForm1();
    const checkpoint = await verifyChain(db);
    expect(checkpoint).toMatchObject({ ok: true, rows: 9, pending: 0, erased: [] });
    expect(await erasePerson()).toEqual({ events: 3, audit_log: 3 });
    expect((await db.query('select form, count(*)::int as n from audit_chain group by form order by form')).rows).toEqual([{ form: 1, n: 9 }, { form: 2, n: 6 }]);
    expect(await verifyChain(db)).toMatchObject({ ok: true, rows: 15, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
    expect(await verifyChain(db, { against: checkpoint.head })).toMatchObject({ ok: true, checkpointAt: 9 });
    expect(await everything()).not.toContain(PERSON);
    // The sealer goes on after them in form 2, and seals the 3 form-1 rows left in form 2 too.
    await plant(1);
    expect(await sealed()).toMatchObject({ rows: 21, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
    expect((await db.query('select count(*)::int as n from audit_chain where form = 1 and (source, row_id) not in (select source, row_id from audit_chain where form = 2)')).rows).toEqual([{ n: 0 }]);
  });

  it('a form-1 row edited before the erasure: the erasure is refused and changes nothing', async () => {
    await plant(1);
    await sealInForm1();
    const created = await eventOf('report.created');
    await db.query(`update events set report_id = 'R-9' where id = $1::bigint`, [created]);
    await expect(erasePerson()).rejects.toThrow(SealMismatchError);
    expect(await db.query('select count(*)::int as n from audit_chain where form = 2')).toMatchObject({ rows: [{ n: 0 }] });
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'events', id: created, position: await positionOf('events', created, 1) });
  });

  it('a form-1 row edited, then erased in form 2: the form-2 seal names it', async () => {
    await plant(1);
    await sealInForm1();
    await erasePerson();
    const created = await eventOf('report.created');
    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [created]);
    await edited('events', created);
  });

  it('a form-1 row edited with a forged form-2 re-seal appended after the checkpoint: not caught (docs/decisions.md)', async () => {
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

  it("after the sealer's pass re-sealed them in form 2, the same forgery is caught against a checkpoint taken after it", async () => {
    await plant(1);
    await sealInForm1();
    const created = await eventOf('report.created');
    const status = await eventOf('report.status_changed');
    // A row edited before the pass is passed over, not laundered into a form-2 seal: verify names it.
    await db.query(`update events set report_id = 'R-9' where id = $1::bigint`, [status]);
    expect(await sealAvailable(db)).toMatchObject({ sealed: 0, resealed: 2 });
    expect(await sealAvailable(db)).toMatchObject({ sealed: 0, resealed: 0 });
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'events', id: status, position: await positionOf('events', status, 1) });
    await db.query(`update events set report_id = 'R-0' where id = $1::bigint`, [status]);
    const checkpoint = await verifyChain(db);
    expect(checkpoint).toMatchObject({ ok: true, rows: 5 });

    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [created]);
    await edited('events', created);
    // The forger cannot add a second form-2 seal; replacing the real one rewrites the chain.
    await expect(forgeReseal('events', created)).rejects.toThrow();
    const position = await positionOf('events', created);
    await db.query('delete from audit_chain where position = $1::bigint', [position]);
    await db.query('update audit_chain set position = position - 1 where position > $1::bigint', [position]);
    await db.query("delete from audit_seal_salts where source = 'events' and row_id = $1::bigint", [created]);
    await forgeReseal('events', created);
    expect(await verifyChain(db, { against: checkpoint.head })).toMatchObject({ ok: false, problem: { kind: 'checkpoint_not_found' } });
  });
});

/** What a forger with SQL access can append: a form-2 seal of a row as it is now, at the head. */
async function forgeReseal(source: SealedTable, id: number): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.exec("set local timezone = 'UTC'");
    const row = (await loadSealedRows(tx, source, [id])).get(id)!;
    const { rh, salts } = sealForm2(source, row);
    const head = await readHead(tx);
    await tx.query(
      `insert into audit_chain (position, source, row_id, row_hash, chain_hash, form) values ($1::bigint, $2::text, $3::bigint, decode($4::text, 'hex'), decode($5::text, 'hex'), 2)`,
      [head.rows + 1, source, id, rh, chainHash(head.hash, head.rows + 1, rh)],
    );
    await tx.query('insert into audit_seal_salts (source, row_id, salts) values ($1::text, $2::bigint, $3::jsonb)', [source, id, JSON.stringify(salts)]);
  });
}

describe(`npm run cli -- verify-audit, on ${storeName}`, () => {
  // The built CLI (dist/src/cli.js: `npm run build` first), as operators run it.
  it('prints the rows erased under each reference', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cms-erasure-'));
    const databases: TestDatabase[] = [];
    const saved = db;
    try {
      const env = await withServiceDatabases({ DATA_DIR: dataDir, PRODUCTION_API_KEY: 'erasure-key-0123456789', DEMO_API_KEY: 'demo-erasure-key-0123456789' }, databases);
      db = env.PRODUCTION_DATABASE_URL ? await openPostgres({ connectionString: env.PRODUCTION_DATABASE_URL, max: 2 }) : await openPglite({ dataDir: join(dataDir, 'production') });
      try {
        await migrate(db);
        await plant(2);
        await sealed();
        await erasePerson();
      } finally {
        await db.close();
      }
      const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [join(import.meta.dirname, '../dist/src/cli.js'), 'verify-audit', '--env', 'production'], { env: { PATH: process.env.PATH ?? '', ...env }, cwd: dataDir }, (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
      });
      expect(out, out.stderr).toMatchObject({ code: 0, stderr: '' });
      expect(out.stdout).toMatch(/^production: audit chain verifies: 6 rows, head [0-9a-f]{64} \(\d+\.\d s\)\nproduction: 4 rows erased under reference GDPR-2026-001\n$/);
    } finally {
      db = saved;
      await Promise.all(databases.map((x) => x.drop()));
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
