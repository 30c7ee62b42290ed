// Found by the adversarial review of b4ee152 (issue 39), failing before the fix: the release before,
// which still serves beside this one during an upgrade (docs/decisions.md, the upgrade rule), and
// what it legitimately wrote must verify: an erasure it makes after migration 0031 ran (the
// migration's trigger fills in its record's fields), and a staff name it erased because it quoted
// the subject's name (attested by the migration). A legacy state that today's routes cannot
// write, built as test/audit-attested-erasures.test.ts builds it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitment } from '../src/platform/audit-chain/forms.js';
import { ERASURE_MARKER, isChatIdKey, parsePointer, personalLeaves } from '../src/platform/audit-chain/personal-fields.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { recordAudit } from '../src/platform/audit.js';
import { loadMigrations, migrate } from '../src/platform/db/migrate.js';
import type { Db } from '../src/platform/db/types.js';
import { recordEvent } from '../src/platform/events.js';
import { AGENT, ERASURE, erasureFixture, PERSON, PSEUDONYM } from './helpers/audit-erasure.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/stores.js';

let d: TestDatabase;
let db: Db;
beforeEach(async () => {
  d = await createTestDatabase({ empty: true });
  db = d.db;
});
afterEach(() => d?.drop());
const { plant, sealed, sealInForm, erasePerson } = erasureFixture(() => db);

describe(`what the release before erased verifies after migration 0031, on ${storeName}`, () => {
  it('an erasure made by the release before while it still serves after migration 0031 ran (upgrade window) verifies', async () => {
    await migrate(db); // 0031 included: the new release's migrations ran, the old instances keep serving
    await plant(2);
    await sealInForm(2); // the old release's sealer (form 2)
    // The old release's subject erasure: its record names no fields (it does not know them).
    expect(await erasePerson({ legacy: true })).toEqual({ events: 2, audit_log: 2 });
    await sealInForm(2);
    const v = await verifyChain(db);
    expect(v, JSON.stringify(v.problem)).toMatchObject({ ok: true, problem: null, erased: [{ reference: ERASURE.reference, rows: 4 }] });
  });

  it("a staff name the release before erased (it matched the subject's name) verifies after migration 0031 attested it", async () => {
    await migrate(db, loadMigrations().filter((m) => m.version <= 30));
    // The subject Pat (reporter_name 'Pat') and an agent whose name contains the word Pat: the
    // release before's erasure matched every personal leaf (staff's included, personal-fields.ts
    // of b4ee152~1) against the subject's terms, whole words of 3+ characters (scrub.ts).
    await db.transaction(async (tx) => {
      await recordEvent(tx, {
        type: 'report.created', actor: { kind: 'agent', chatId: AGENT, name: 'Pat Morgan' }, correlationId: 'c-1', reportId: 'R-1',
        after: { report_id: 'R-1', reporter: PERSON, reporter_name: 'Pat', reason: 'hello', status: 'Open' },
      });
    });
    await sealInForm(2);
    // The release before's eraseSealedRows on that row (b4ee152~1:src/platform/audit-chain/erase.ts,
    // eraseLeaves): each matching leaf of the form-2 list set to the marker or pseudonym, its salt
    // moved to an erased entry keeping the form-2 commitment; then its record, without `fields`.
    await db.transaction(async (tx) => {
      await tx.exec("set local timezone = 'UTC'");
      const { rows } = await tx.query<{ id: number; row: Record<string, unknown> }>("select id, to_jsonb(r) - 'search_text' - 'sealing_tx' as row from events r");
      for (const { id, row } of rows) {
        const { rows: s } = await tx.query<{ salts: Record<string, string>; erased: Record<string, unknown> }>("select salts, erased from audit_seal_salts where source = 'events' and row_id = $1::bigint", [id]);
        const { salts, erased } = s[0]!;
        for (const leaf of personalLeaves('events', row, 2).filter((l) => l.value === PERSON || /\bPat\b/.test(l.value))) {
          const value = isChatIdKey(leaf.key) ? PSEUDONYM : ERASURE_MARKER;
          erased[leaf.pointer] = { commitment: commitment(2, salts[leaf.pointer]!, leaf.value), erasure: ERASURE.id, reference: ERASURE.reference, value };
          delete salts[leaf.pointer];
          const path = parsePointer(leaf.pointer);
          let node = row as Record<string, unknown>;
          for (const token of path.slice(0, -1)) node = node[token] as Record<string, unknown>;
          node[path.at(-1)!] = value;
        }
        expect(erased).toHaveProperty(['/actor_name']);
        await tx.query('update events set actor_name = $2::text, after = $3::jsonb where id = $1::bigint', [id, row.actor_name, JSON.stringify(row.after)]);
        await tx.query("update audit_seal_salts set salts = $2::jsonb, erased = $3::jsonb where source = 'events' and row_id = $1::bigint", [id, JSON.stringify(salts), JSON.stringify(erased)]);
      }
      await recordAudit(tx, { actor: { kind: 'operator' }, action: 'admin.subject_erased', target: PSEUDONYM, reason: 'Asked', after: { erasure_id: ERASURE.id, reference: ERASURE.reference }, correlationId: 'erasure' });
    });
    await sealInForm(2);
    await migrate(db); // 0031 attests every erased field, /actor_name included
    const { rows: attested } = await db.query<{ after: { fields: unknown[][] } }>("select after from audit_log where action = 'admin.erasures_attested'");
    expect(attested[0]!.after.fields.map((f) => f[4])).toContain('/actor_name');
    await sealed();
  });
});
