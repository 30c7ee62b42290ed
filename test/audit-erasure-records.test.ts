// Found by the adversarial review of b4ee152 (issue 39), failing before the fix: what verify-audit
// accepted of an erasure record and of an erased entry. A record counts only when it is sealed or
// waits for the sealer's next pass (one dated in the future never would), and an erased entry's
// reference must be its record's. Fixtures through the routes (a report filed with the API key, a
// subject erased by a Director), sealed; then the tampering by SQL, as a writer behind the
// service's back would.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitment } from '../src/platform/audit-chain/forms.js';
import { ERASURE_MARKER } from '../src/platform/audit-chain/personal-fields.js';
import { readHead, sealAvailable } from '../src/platform/audit-chain/seal.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { sealedAndVerified } from './helpers/erasure-checks.js';
import { chatId } from './helpers/identity.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

describe(`erasure records and erased entries that verify-audit must refuse, on ${storeName}`, () => {
  let t: TestApp;
  let n = 0;
  beforeEach(async () => {
    t = await createTestApp();
  });
  afterEach(() => t.close());

  const q = async <R extends Record<string, unknown>>(sql: string, values: unknown[] = []) => (await t.db.production.query<R>(sql, values)).rows;

  const { createOk } = reportCrudHelpers(() => t);
  const file = (reporter: string, name: string) => createOk({ reporter, reporter_name: name, reason: `${name} in voice chat`, notes: 'notes', evidence: 'clip' });
  const createdOf = async (reportId: string) =>
    Number((await q<{ id: number }>("select id from events where type = 'report.created' and report_id = $1::text order by id limit 1", [reportId]))[0]!.id);

  async function eraseSubject(subject: string): Promise<{ erasure_id: string; reference: string }> {
    const director = await admin(t);
    const res = await t.app.inject({
      method: 'POST', url: `/admin/subjects/${subject}/erase`, headers: director.headers, payload: { reason: 'Deletion request', reference: `GDPR-RECORDS-${process.pid}-${++n}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('a forged erasure with a forged record that is never sealed (dated in the future): edited, with and without a checkpoint', async () => {
    const bystander = await file(chatId(), 'Brenna Ostwick');
    const id = await createdOf(bystander);
    const checkpoint = await sealedAndVerified(t.db.production);
    expect((await verifyChain(t.db.production, { against: checkpoint.head })).ok).toBe(true);

    // Tampering: the bystander's name (nobody erased it) made the marker, its salt moved to an
    // erased entry of an erasure that never happened...
    const pointer = '/after/reporter_name';
    const salt = (await q<{ s: string }>("select salts->>$2::text as s from audit_seal_salts where source = 'events' and row_id = $1::bigint", [id, pointer]))[0]!.s;
    await q("update events set after = jsonb_set(after, '{reporter_name}', to_jsonb($2::text)) where id = $1::bigint", [id, ERASURE_MARKER]);
    await q(
      "update audit_seal_salts set salts = salts - $2::text, erased = jsonb_build_object($2::text, $3::jsonb) where source = 'events' and row_id = $1::bigint",
      [id, pointer, JSON.stringify({ commitment: commitment(3, salt, 'Brenna Ostwick'), erasure: 'forged-1', reference: 'GDPR-forged', value: ERASURE_MARKER })],
    );
    // ... and its "record": an admin audit row the sealer never reaches (a transaction id far in
    // the future), so it never enters the chain.
    await q(
      `insert into audit_log (actor_kind, action, reason, after, correlation_id, sealing_tx)
       values ('system', 'admin.subject_erased', 'x', $1::jsonb, 'forged', '999999999999'::xid8)`,
      [JSON.stringify({ erasure_id: 'forged-1', reference: 'GDPR-forged', fields: [['events', id, pointer, ERASURE_MARKER]] })],
    );
    await sealAvailable(t.db.production);
    const head = await readHead(t.db.production);
    expect(head.rows).toBe(checkpoint.rows); // nothing new was sealed: the record is not in the chain
    // The field is named as edited: its only record is not sealed, and never will be (it passed, pending 1).
    for (const v of [await verifyChain(t.db.production), await verifyChain(t.db.production, { against: checkpoint.head })]) {
      expect(v, JSON.stringify(v)).toMatchObject({ ok: false, problem: { kind: 'edited', source: 'events', id, field: pointer, erasure: 'forged-1' } });
    }
  });

  it("an erased entry's reference rewritten (a GDPR erasure relabelled as retention's): edited", async () => {
    const subject = chatId();
    await file(subject, 'Quillon Vexmoor');
    await sealedAndVerified(t.db.production);
    const erasure = await eraseSubject(subject);
    const sealed = await sealedAndVerified(t.db.production);
    expect(sealed.erased).toEqual([{ reference: erasure.reference, rows: expect.any(Number) }]);
    // Tampering of the unsealed side table only: every erased entry's reference rewritten.
    await q(
      `update audit_seal_salts s set erased = (select jsonb_object_agg(e.key, jsonb_set(e.value, '{reference}', '"retention"')) from jsonb_each(s.erased) e)
        where s.erased <> '{}'::jsonb`,
    );
    // An edit: the entries' reference is not their record's (it passed, counted under "retention").
    const v = await verifyChain(t.db.production, { against: sealed.head });
    expect(v, JSON.stringify(v)).toMatchObject({ ok: false, problem: { kind: 'edited', erasure: erasure.erasure_id } });
  });
});
