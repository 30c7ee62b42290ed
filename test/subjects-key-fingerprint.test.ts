// One pseudonym key per environment, across its instances (issue 39): the first erasure records the
// key's fingerprint, and an instance whose key differs is refused 503 PSEUDONYM_KEY_MISMATCH with
// nothing written, rather than give the same person a second pseudonym; `pseudonym-key --adopt`
// makes the configured key the environment's on purpose. The other instance is the service's own
// key path (subjectPseudonymKey) on the same database with another <ENV>_PSEUDONYM_KEY. And on the
// upgrade from a release that kept its key in the database, an instance given another key is
// refused too, the earlier key kept (found by the second review: it was adopted, the earlier one
// deleted for good).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyFingerprint, recordFingerprint, subjectPseudonymKey } from '../src/admin/subjects/subject-key.js';
import { createTestDatabase } from './helpers/stores.js';
import { pseudonymKey } from '../src/platform/audit-chain/personal-fields.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, type Person } from './helpers/identity.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

const OTHER_KEY = 'another-instance-has-this-pseudonym-key-0123456789';

describe(`the pseudonym key's fingerprint on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let n = 0;
  const rows = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Record<string, unknown>>(sql, values)).rows;
  const otherInstance = () =>
    subjectPseudonymKey({ name: 'production', config: { pseudonymKey: OTHER_KEY, databaseUrl: 'postgres://elsewhere/x' }, dataDir: ':memory:', db: t.db.production });
  const { createOk } = reportCrudHelpers(() => t);
  async function reporter(): Promise<{ person: string; report: string }> {
    const person = chatId();
    return { person, report: await createOk({ reporter: person }) };
  }
  const erase = (person: string) =>
    t.app.inject({ method: 'POST', url: `/admin/subjects/${person}/erase`, headers: director.headers, payload: { reason: 'Asked by email', reference: `GDPR-FP-${++n}` } });

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
  });
  afterAll(() => t.close());

  it('the first erasure records the fingerprint; an instance with another key is refused, one with the same key is not', async () => {
    const { person } = await reporter();
    expect(await rows('select fingerprint from pseudonym_key_fingerprint')).toEqual([]);
    const res = await erase(person);
    expect(res.statusCode, res.body).toBe(200);
    const [recorded] = await rows('select fingerprint from pseudonym_key_fingerprint');
    expect(recorded!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    await expect(otherInstance()).rejects.toMatchObject({ statusCode: 503, code: 'PSEUDONYM_KEY_MISMATCH' });
    expect(await rows('select fingerprint from pseudonym_key_fingerprint')).toEqual([recorded]);
    // The fingerprint tells nothing of a chat id: it is not the person's pseudonym, nor contains it.
    expect(JSON.stringify(recorded)).not.toContain(res.json().pseudonym.slice(1, 12));
  });

  it('this instance is refused once another key was adopted: 503, nothing written; adopting its key again lets it erase', async () => {
    const { person, report } = await reporter();
    await recordFingerprint(t.db.production, pseudonymKey(OTHER_KEY), true);
    const erasures = await rows('select count(*)::int as n from subject_erasures');
    const refused = await erase(person);
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.json()).toEqual({ success: false, error: expect.stringContaining('pseudonym-key --env production --adopt'), code: 'PSEUDONYM_KEY_MISMATCH' });
    expect(await rows('select reporter from reports where report_id = $1::text', [report])).toEqual([{ reporter: person }]);
    expect(await rows('select count(*)::int as n from subject_erasures')).toEqual(erasures);
    // The other key is the environment's now: that instance passes.
    expect(keyFingerprint(await otherInstance())).toBe(keyFingerprint(pseudonymKey(OTHER_KEY)));
  });

  it("on the upgrade from a release that kept its key in the database, another configured key is refused and the earlier key kept", async () => {
    const LEGACY = 'the-key-the-release-before-kept-in-signing-keys-0123';
    const d = await createTestDatabase();
    try {
      const q = async (sql: string) => (await d.db.query<Record<string, unknown>>(sql)).rows;
      // What the release before left: its key in signing_keys (its erasures made their pseudonyms under it).
      await d.db.query("insert into signing_keys (purpose, secret) values ('subject_pseudonym', $1::text)", [LEGACY]);
      const instance = (configured: string) =>
        subjectPseudonymKey({ name: 'production', config: { pseudonymKey: configured, databaseUrl: 'postgres://db/x' }, dataDir: ':memory:', db: d.db });
      await expect(instance(OTHER_KEY)).rejects.toMatchObject({ statusCode: 503, code: 'PSEUDONYM_KEY_MISMATCH' });
      expect(await q("select secret from signing_keys where purpose = 'subject_pseudonym'")).toEqual([{ secret: LEGACY }]);
      expect(await q('select fingerprint from pseudonym_key_fingerprint')).toEqual([{ fingerprint: keyFingerprint(pseudonymKey(LEGACY)) }]);
      // Given the earlier key (the line `cli pseudonym-key` prints), the instance erases under it and the database forgets it.
      expect(keyFingerprint(await instance(LEGACY))).toBe(keyFingerprint(pseudonymKey(LEGACY)));
      expect(await q("select secret from signing_keys where purpose = 'subject_pseudonym'")).toEqual([]);
    } finally {
      await d.drop();
    }
  });
});
