// Forgeries verify-audit must catch (issue 39, findings 4 and 5), on both stores. Every fixture is
// written through the routes as the bot and the dashboards write it (a report filed with the API
// key, a claim by a signed-in agent, a subject erased by a Director), sealed, and the chain's head
// taken as the checkpoint; then the tampering is done by SQL, because that is the attack: someone
// with write access to the database behind the service's back, which verify-audit exists to catch.
// Each case has its own app and databases, so one case's tampering cannot fail another.
//
//   - finding 4: a personal leaf replaced by its commitment as an object {"commitment": c}, or by
//     null, with its salt deleted, must be an edit of the row. Form 2 put exactly that object in
//     the leaf's place, so the row hashed as sealed (null was caught by the hash already, kept as a
//     guard); form 3 binds which leaves were personal strings, and a form-2 row (sealed by the
//     release before, planted here as it sealed) names the object as an edit.
//   - finding 5: an erased entry forged for a field no erasure removed, citing a real erasure (its
//     id and reference), must be an edit: a staff member's chat id made a pseudonym (form 3 does
//     not commit to staff fields apart: the row's hash fails), and a name of a person nobody
//     erased made the marker (the erasure's record does not name the field). Both passed before,
//     counted as erased.
//   - and the control: the erasure made through the route verifies, counted under its reference.
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitment, sealIn } from '../src/platform/audit-chain/forms.js';
import { chainHash } from '../src/platform/audit-chain/hashes.js';
import { ERASURE_MARKER, isPseudonym } from '../src/platform/audit-chain/personal-fields.js';
import { readHead } from '../src/platform/audit-chain/seal.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { sealedAndVerified } from './helpers/erasure-checks.js';
import { chatId, signedIn } from './helpers/identity.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

interface Fixture {
  /** The chain's head before the erasure, and after it (everything sealed). */
  before: { rows: number; hash: string };
  head: { rows: number; hash: string };
  erasure: { id: string; reference: string; pseudonym: string };
  /** report.created of the erased subject's report, and of a bystander's report nobody erased. */
  erasedCreated: number;
  bystanderCreated: number;
  /** report.assigned of the bystander's report, claimed by a signed-in agent. */
  claimed: number;
  staff: string;
}

describe(`forged commitments and erasures on ${storeName}`, () => {
  let t: TestApp;
  let n = 0;
  beforeEach(async () => {
    t = await createTestApp();
  });
  afterEach(() => t.close());

  const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []) => (await t.db.production.query<R>(sql, values)).rows;
  const eventOf = async (type: string, reportId: string) =>
    Number((await q<{ id: number }>('select id from events where type = $1::text and report_id = $2::text order by id limit 1', [type, reportId]))[0]!.id);
  const saltsOf = async (id: number) =>
    (await q<{ salts: Record<string, string>; erased: Record<string, unknown> }>("select salts, erased from audit_seal_salts where source = 'events' and row_id = $1::bigint", [id]))[0]!;

  const { createOk } = reportCrudHelpers(() => t);
  const file = (reporter: string, name: string, words: string) =>
    createOk({ reporter, reporter_name: name, reason: `${words} in voice chat`, notes: `${words} notes`, evidence: `${words} clip` });

  /** A subject's report and a bystander's report claimed by staff, sealed; the subject erased; all sealed. */
  async function fixture(): Promise<Fixture> {
    const director = await admin(t);
    const staff = await signedIn(t);
    const subject = chatId();
    const erasedReport = await file(subject, 'Quillon Vexmoor', 'Quillon');
    const bystanderReport = await file(chatId(), 'Brenna Ostwick', 'Brenna');
    const claim = await t.app.inject({ method: 'POST', url: `/reports/${bystanderReport}/action`, headers: staff.headers, payload: { action: 'claim', reason: 'Mine' } });
    expect(claim.statusCode, claim.body).toBe(200);
    const sealedBefore = await sealedAndVerified(t.db.production);
    const erased = await t.app.inject({
      method: 'POST', url: `/admin/subjects/${subject}/erase`, headers: director.headers, payload: { reason: 'Deletion request by email', reference: `GDPR-39-${process.pid}-${++n}` },
    });
    expect(erased.statusCode, erased.body).toBe(200);
    const body = erased.json();
    expect(isPseudonym(body.pseudonym)).toBe(true);
    const sealed = await sealedAndVerified(t.db.production);
    const head = await readHead(t.db.production);
    expect(head).toEqual({ rows: sealed.rows, hash: sealed.head });
    return {
      before: { rows: sealedBefore.rows, hash: sealedBefore.head },
      head,
      erasure: { id: String(body.erasure_id), reference: body.reference, pseudonym: body.pseudonym },
      erasedCreated: await eventOf('report.created', erasedReport),
      bystanderCreated: await eventOf('report.created', bystanderReport),
      claimed: await eventOf('report.assigned', bystanderReport),
      staff: staff.agent.chat_id,
    };
  }

  /** verify-audit without a checkpoint and against the head taken before the tampering: both name the row. */
  async function editedBoth(f: Fixture, id: number, field?: string): Promise<void> {
    const expected = { kind: 'edited', source: 'events', id, ...(field === undefined ? {} : { field }) };
    for (const v of [await verifyChain(t.db.production), await verifyChain(t.db.production, { against: f.head.hash })]) {
      expect(v, JSON.stringify(v)).toMatchObject({ ok: false, problem: expected });
    }
  }

  it('control: the erasure made through the route verifies, with and without a checkpoint, counted under its reference', async () => {
    const f = await fixture();
    const [created] = await q<{ after: Record<string, unknown> }>('select after from events where id = $1::bigint', [f.erasedCreated]);
    expect(created!.after).toMatchObject({ reporter: f.erasure.pseudonym, reporter_name: ERASURE_MARKER, reason: ERASURE_MARKER });
    expect((await saltsOf(f.erasedCreated)).erased['/after/reporter_name']).toMatchObject({ erasure: f.erasure.id, reference: f.erasure.reference, value: ERASURE_MARKER });
    const counted = { reference: f.erasure.reference, rows: expect.any(Number) };
    const plain = await verifyChain(t.db.production);
    expect(plain).toMatchObject({ ok: true, problem: null, rows: f.head.rows, head: f.head.hash, erased: [counted] });
    expect(plain.erased[0]!.rows).toBeGreaterThan(0);
    for (const against of [f.before, f.head]) {
      const v = await verifyChain(t.db.production, { against: against.hash });
      expect(v, JSON.stringify(v.problem)).toMatchObject({ ok: true, problem: null, checkpointAt: against.rows, erased: [counted] });
      expect(v.erased[0]!.rows).toBe(plain.erased[0]!.rows);
    }
  });

  describe('finding 4: a personal leaf replaced by a commitment object or null, its salt deleted', () => {
    /** The bystander's name (nobody erased it) replaced by `value`, and its salt deleted. */
    async function replaceName(f: Fixture, value: unknown): Promise<void> {
      const pointer = '/after/reporter_name';
      const { salts } = await saltsOf(f.bystanderCreated);
      expect(salts[pointer]).toMatch(/^[0-9a-f]{32}$/);
      await q(`update events set after = jsonb_set(after, '{reporter_name}', $2::jsonb) where id = $1::bigint`, [f.bystanderCreated, JSON.stringify(value)]);
      await q(`update audit_seal_salts set salts = salts - $2::text where source = 'events' and row_id = $1::bigint`, [f.bystanderCreated, pointer]);
    }

    it('the commitment object the seal holds for it: edited, naming the row', async () => {
      const f = await fixture();
      const salt = (await saltsOf(f.bystanderCreated)).salts['/after/reporter_name']!;
      await replaceName(f, { commitment: commitment(3, salt, 'Brenna Ostwick') });
      expect((await q<{ v: unknown }>("select after->'reporter_name' as v from events where id = $1::bigint", [f.bystanderCreated]))[0]!.v).toEqual({ commitment: commitment(3, salt, 'Brenna Ostwick') });
      await editedBoth(f, f.bystanderCreated);
    });

    it('null: edited, naming the row', async () => {
      const f = await fixture();
      await replaceName(f, null);
      await editedBoth(f, f.bystanderCreated);
    });
  });

  describe('finding 5: an erased entry forged for a field no erasure removed, citing a real erasure', () => {
    /** The field at `pointer` set to `value` by `update`, its salt moved into a forged erased entry. */
    async function forge(f: Fixture, id: number, pointer: string, old: string, value: string, update: string): Promise<void> {
      // The salt the seal holds for it; a seal that commits no salt for the field (it hashes it as
      // it is) leaves the forger a salt of their own: the forged entry is then the same attack.
      const salt = (await saltsOf(id)).salts[pointer] ?? randomBytes(16).toString('hex');
      await q(update, [id, value]);
      const entry = { commitment: commitment(3, salt, old), erasure: f.erasure.id, reference: f.erasure.reference, value };
      await q(
        `update audit_seal_salts set salts = salts - $2::text, erased = jsonb_set(erased, array[$2::text], $3::jsonb) where source = 'events' and row_id = $1::bigint`,
        [id, pointer, JSON.stringify(entry)],
      );
    }

    it("a staff member's chat id made a pseudonym: edited, naming the row", async () => {
      const f = await fixture();
      expect((await q('select actor_chat_id from events where id = $1::bigint', [f.claimed]))[0]).toEqual({ actor_chat_id: f.staff });
      // The erasure's own pseudonym: a value an erasure does write, on a field it did not erase.
      await forge(f, f.claimed, '/actor_chat_id', f.staff, f.erasure.pseudonym, 'update events set actor_chat_id = $2::text where id = $1::bigint');
      await editedBoth(f, f.claimed);
    });

    it('the name of a person no erasure touched made the marker: edited, naming the row and /after/reporter_name', async () => {
      const f = await fixture();
      expect((await saltsOf(f.bystanderCreated)).salts['/after/reporter_name']).toMatch(/^[0-9a-f]{32}$/);
      await forge(f, f.bystanderCreated, '/after/reporter_name', 'Brenna Ostwick', ERASURE_MARKER,
        `update events set after = jsonb_set(after, '{reporter_name}', to_jsonb($2::text)) where id = $1::bigint`);
      await editedBoth(f, f.bystanderCreated, '/after/reporter_name');
      expect((await verifyChain(t.db.production)).problem).toMatchObject({ erasure: f.erasure.id });
    });
  });

  describe('rows sealed in form 2 by the release before', () => {
    /** Seals what is not sealed as the release before did: form 2, its salts beside it. */
    async function sealInForm2(): Promise<void> {
      await t.db.production.transaction(async (tx) => {
        await tx.exec("set local timezone = 'UTC'");
        const { rows } = await tx.query<{ id: number; row: Record<string, unknown> }>(
          "select id, to_jsonb(r) - 'search_text' - 'sealing_tx' as row from events r where not exists (select 1 from audit_chain c where c.source = 'events' and c.row_id = r.id) order by sealing_tx, id",
        );
        let { rows: position, hash } = await readHead(tx);
        for (const r of rows) {
          const { rh, salts } = sealIn(2, 'events', r.row);
          hash = chainHash(hash, ++position, rh);
          await tx.query("insert into audit_chain (position, source, row_id, row_hash, chain_hash, form) values ($1::bigint, 'events', $2::bigint, decode($3::text, 'hex'), decode($4::text, 'hex'), 2)", [position, r.id, rh, hash]);
          await tx.query("insert into audit_seal_salts (source, row_id, salts) values ('events', $1::bigint, $2::jsonb)", [r.id, JSON.stringify(salts)]);
        }
        await tx.exec("update audit_chain_state set events_tx = (select max(sealing_tx) from events), events_id = (select max(id) from events)");
      });
    }

    it('a personal leaf replaced by its commitment object, its salt deleted: edited, naming the field', async () => {
      const report = await file(chatId(), 'Brenna Ostwick', 'Brenna');
      await sealInForm2();
      const id = await eventOf('report.created', report);
      const pointer = '/after/reporter_name';
      const salt = (await saltsOf(id)).salts[pointer]!;
      const head = await sealedAndVerified(t.db.production);
      await q(`update events set after = jsonb_set(after, '{reporter_name}', $2::jsonb) where id = $1::bigint`, [id, JSON.stringify({ commitment: commitment(2, salt, 'Brenna Ostwick') })]);
      await q(`update audit_seal_salts set salts = salts - $2::text where source = 'events' and row_id = $1::bigint`, [id, pointer]);
      for (const v of [await verifyChain(t.db.production), await verifyChain(t.db.production, { against: head.head })]) {
        expect(v, JSON.stringify(v)).toMatchObject({ ok: false, problem: { kind: 'edited', source: 'events', id, field: pointer } });
      }
    });

    it("a staff member's chat id marked erased with the right commitment: edited, naming the field", async () => {
      const staff = await signedIn(t);
      const report = await file(chatId(), 'Brenna Ostwick', 'Brenna');
      const claim = await t.app.inject({ method: 'POST', url: `/reports/${report}/action`, headers: staff.headers, payload: { action: 'claim', reason: 'Mine' } });
      expect(claim.statusCode, claim.body).toBe(200);
      await sealInForm2();
      const id = await eventOf('report.assigned', report);
      const salt = (await saltsOf(id)).salts['/actor_chat_id']!;
      expect(salt).toMatch(/^[0-9a-f]{32}$/);
      await sealedAndVerified(t.db.production);
      const forged = '0' + '1'.repeat(19);
      await q('update events set actor_chat_id = $2::text where id = $1::bigint', [id, forged]);
      const entry = { commitment: commitment(2, salt, staff.agent.chat_id), erasure: '1', reference: 'GDPR-forged', value: forged };
      await q(`update audit_seal_salts set salts = salts - '/actor_chat_id', erased = jsonb_build_object('/actor_chat_id', $2::jsonb) where source = 'events' and row_id = $1::bigint`, [id, JSON.stringify(entry)]);
      expect((await verifyChain(t.db.production)).problem).toMatchObject({ kind: 'edited', source: 'events', id, field: '/actor_chat_id' });
    });
  });
});
