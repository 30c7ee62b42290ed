// The seal leaves out events.report_flagged (hashes.ts; migration 0033): a flag change rewrites it
// in every event of the report, sealed ones included, and the release before, which seals the
// same rows, serves beside this one during the upgrade. Pinned: the report flagged after its
// events were sealed, the chain still verifies and the sealer seals on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { sealedAndVerified } from './helpers/erasure-checks.js';
import { chatId } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

describe(`the seal and events.report_flagged, on ${storeName}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const file = async (n: number) => {
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { report_id: `RSV-${process.pid}-${n}`, reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' } });
    expect(res.statusCode, res.body).toBe(201);
    return `RSV-${process.pid}-${n}`;
  };

  it('written after sealing, it changes no seal', async () => {
    const id = await file(1);
    const before = await sealedAndVerified(t.db.production);
    const flag = await t.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: key, payload: { is_supervisor: true } });
    expect(flag.statusCode, flag.body).toBe(200);
    const { rows } = await t.db.production.query<{ flagged: boolean }>('select report_flagged as flagged from events where report_id = $1::text order by id', [id]);
    expect(rows.map((r) => r.flagged)).toEqual([true, true]);
    expect(await verifyChain(t.db.production, { against: before.head })).toMatchObject({ ok: true, problem: null, rows: before.rows });
    await file(2);
    const after = await sealedAndVerified(t.db.production);
    expect(after.rows).toBeGreaterThan(before.rows);
  });
});
