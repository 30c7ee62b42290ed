// The audit chain survives an erasure and still catches tampering (issue 32, item 3): personal
// fields of sealed events and admin audit rows erased through eraseSealedRows verify, with and
// without a checkpoint, counted under the erasure's reference; every other change, and every
// change of a personal field to anything but the marker, fails naming the row, forged erasure
// records included, and since issue 39 a forged erasure with the right commitment too (its
// erasure's record does not name the field). Rows sealed in form 1: test/audit-erasure-form1.test.ts;
// forgeries of form 2 and 3 through the routes: test/audit-forgery.test.ts. On both stores.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eraseSealedRows, SealMismatchError } from '../src/platform/audit-chain/erase.js';
import { commitment } from '../src/platform/audit-chain/forms.js';
import { ERASURE_MARKER, pseudonym, pseudonymKey } from '../src/platform/audit-chain/personal-fields.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import type { Db } from '../src/platform/db/types.js';
import { AGENT, CLEAR_CHAIN, ERASURE, erasureFixture, OTHER, PERSON, PSEUDONYM } from './helpers/audit-erasure.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/stores.js';

let d: TestDatabase;
let db: Db;
beforeAll(async () => {
  d = await createTestDatabase();
  db = d.db;
});
afterAll(() => d.drop());
afterEach(() => db.exec(CLEAR_CHAIN));
const { plant, sealed, erasePerson, eventOf, everything, edited } = erasureFixture(() => db);

describe(`an erasure on a form-3 chain, on ${storeName}`, () => {
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
    expect(salts.erased['/after/reporter_name']).toEqual({ commitment: commitment(3, saltBefore, 'Pat Person'), erasure: 'ER-1', reference: 'GDPR-2026-001', value: ERASURE_MARKER });
    expect(salts.erased['/after/reporter']).toMatchObject({ value: PSEUDONYM });
    expect((await db.query<{ n: number }>('select count(*)::int as n from audit_seal_salts where salts::text like $1::text', [`%${saltBefore}%`])).rows[0]!.n).toBe(0);

    // A second erasure changes nothing; rows written after it are sealed and verify too.
    expect(await erasePerson()).toEqual({ events: 0, audit_log: 0 });
    await plant(1);
    expect(await erasePerson()).toEqual({ events: 1, audit_log: 1 }); // not sealed yet: just overwritten
    // Sealed since: the first erasure's record and the rows of plant(1) (the erasures after it
    // erased no sealed field: they wrote no record).
    expect(await sealed()).toMatchObject({ rows: checkpoint.rows + 4, erased: [{ reference: 'GDPR-2026-001', rows: 6 }] });
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

  it('a forged erasure with the right commitment: its erasure has no record naming the field (issue 39; it passed before)', async () => {
    const victim = await erased();
    const salt = (await db.query<{ s: string }>("select salts->>'/after/reported_name' as s from audit_seal_salts where source = 'events' and row_id = $1::bigint", [victim])).rows[0]!.s;
    await setAfter(victim, 'reported_name', ERASURE_MARKER);
    for (const erasure of ['forged', ERASURE.id]) {
      await setErased(victim, '/after/reported_name', { commitment: commitment(3, salt, 'Olive Other'), erasure, reference: 'FORGED', value: ERASURE_MARKER });
      await edited('events', victim, '/after/reported_name', erasure);
    }
  });
});
