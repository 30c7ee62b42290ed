// Erasures made before migration 0031 (issue 39, finding 5): their records did not name the fields
// they erased, which verify-audit now requires. The migration attests every field erased until then
// in one admin audit row; the chain verifies after it, those rows counted under their erasure's
// reference, and a field forged as erased after the upgrade is still caught. The database is built
// as the release before left it (migrations up to 0030, rows sealed in form 2 and erased as it
// erased, its record without `fields`): a legacy state, which today's routes cannot write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitment } from '../src/platform/audit-chain/forms.js';
import { ERASURE_MARKER } from '../src/platform/audit-chain/personal-fields.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { loadMigrations, migrate } from '../src/platform/db/migrate.js';
import type { Db } from '../src/platform/db/types.js';
import { ERASURE, erasureFixture } from './helpers/audit-erasure.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/stores.js';

let d: TestDatabase;
let db: Db;
beforeAll(async () => {
  d = await createTestDatabase({ empty: true });
  db = d.db;
});
afterAll(() => d?.drop());
const { plant, sealed, sealInForm, erasePerson, eventOf, edited } = erasureFixture(() => db);

describe(`erasures made before their records named their fields, on ${storeName}`, () => {
  it('are attested by migration 0031 and verify after it; a field forged as erased afterwards is caught', async () => {
    await migrate(db, loadMigrations().filter((m) => m.version <= 30));
    await plant(2);
    await sealInForm(2);
    expect(await erasePerson({ legacy: true })).toEqual({ events: 2, audit_log: 2 });
    await sealInForm(2);
    const erasedBefore = (await db.query<{ n: number }>("select count(*)::int as n from audit_seal_salts, jsonb_each(erased)")).rows[0]!.n;
    expect(erasedBefore).toBeGreaterThan(0);
    // Without an attestation the erased fields have no record: what verify-audit now says of them.
    expect((await verifyChain(db)).problem).toMatchObject({ kind: 'edited', erasure: ERASURE.id });

    expect(await migrate(db)).toEqual(loadMigrations().filter((m) => m.version > 30).map((m) => m.version));
    const { rows: attested } = await db.query<{ actor_kind: string; target: string | null; after: { fields: unknown[][] } }>(
      "select actor_kind, target, after from audit_log where action = 'admin.erasures_attested'",
    );
    expect(attested).toHaveLength(1);
    expect(attested[0]).toMatchObject({ actor_kind: 'system', target: null });
    expect(attested[0]!.after.fields).toHaveLength(erasedBefore);
    expect(attested[0]!.after.fields[0]).toEqual([ERASURE.id, ERASURE.reference, expect.stringMatching(/^(events|audit_log)$/), expect.any(Number), expect.stringMatching(/^\//), expect.any(String)]);
    const checkpoint = await sealed();
    expect(checkpoint).toMatchObject({ erased: [{ reference: ERASURE.reference, rows: 4 }] });

    // After the upgrade: another field of an erased row forged as erased by the same erasure.
    const created = await eventOf('report.created');
    const salt = (await db.query<{ s: string }>("select salts->>'/after/reported_name' as s from audit_seal_salts where source = 'events' and row_id = $1::bigint", [created])).rows[0]!.s;
    await db.query(`update events set after = jsonb_set(after, '{reported_name}', to_jsonb($2::text)) where id = $1::bigint`, [created, ERASURE_MARKER]);
    await db.query(
      `update audit_seal_salts set salts = salts - '/after/reported_name', erased = erased || jsonb_build_object('/after/reported_name', $2::jsonb) where source = 'events' and row_id = $1::bigint`,
      [created, JSON.stringify({ commitment: commitment(2, salt, 'Olive Other'), erasure: ERASURE.id, reference: ERASURE.reference, value: ERASURE_MARKER })],
    );
    await edited('events', created, '/after/reported_name', ERASURE.id);
    expect((await verifyChain(db, { against: checkpoint.head })).ok).toBe(false);
  });
});
