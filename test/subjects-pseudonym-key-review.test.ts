// The pseudonym key out of the database (issue 39, finding 9), the cases an adversarial review of
// the first version found (each failed on it): empty or short key files, concurrent first use, an
// earlier release's key left in the database beside the variable, the retention without a key.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pseudonymKeyFile, subjectPseudonymKey, recordFingerprint } from '../src/admin/subjects/subject-key.js';
import { pseudonym, pseudonymKey } from '../src/platform/audit-chain/personal-fields.js';
import { admin } from './helpers/admin.js';
import { createTestApp, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { defaultOpenDb } from '../src/platform/environments.js';
import { chatId } from './helpers/identity.js';
import { SCRATCH, storeName } from './helpers/stores.js';

const LEGACY = 'an-earlier-release-kept-this-key-in-the-database-0123';

describe(`the pseudonym key against careless operators, as reviewed, on ${storeName}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());
  const source = (dataDir: string) => ({ name: 'production' as const, config: { pseudonymKey: undefined, databaseUrl: undefined }, dataDir, db: t.db.production });

  it('an empty key file (a crash between create and write, a truncated copy) is refused, not used as the empty key', async () => {
    const dataDir = await mkdtemp(join(SCRATCH, 'rv39-'));
    await writeFile(pseudonymKeyFile(dataDir, 'production'), '', { mode: 0o600 });
    const got = await subjectPseudonymKey(source(dataDir)).then(
      (k) => ({ key: k.equals(pseudonymKey('')) ? 'the empty secret: anyone can compute pseudonym(HMAC(""), chat id)' : 'other' }),
      (err: Error) => ({ refused: err.message }),
    );
    expect(got).toHaveProperty('refused');
  });

  it('a key file shorter than the 32 characters the variable needs is refused', async () => {
    const dataDir = await mkdtemp(join(SCRATCH, 'rv39-'));
    await writeFile(pseudonymKeyFile(dataDir, 'production'), 'abc\n', { mode: 0o600 });
    await expect(subjectPseudonymKey(source(dataDir))).rejects.toThrow();
  });

  it('concurrent first uses of one folder all get the key that ends up in the file', async () => {
    const dataDir = await mkdtemp(join(SCRATCH, 'rv39-'));
    const keys = await Promise.all(Array.from({ length: 8 }, () => subjectPseudonymKey(source(dataDir))));
    const inFile = pseudonymKey((await readFile(pseudonymKeyFile(dataDir, 'production'), 'utf8')).trim());
    expect(keys.map((k) => k.equals(inFile))).toEqual(keys.map(() => true));
  });

  it("with the variable set to it, an earlier release's key does not stay in the database (and its backups)", async () => {
    // An instance with the variable set to the earlier release's key (the line `cli pseudonym-key`
    // prints; another key is refused while that one is there: subjects-key-fingerprint.test.ts);
    // on PostgreSQL as deployed, on the database of this file's app.
    const env = { PRODUCTION_PSEUDONYM_KEY: LEGACY, ...(storeName === 'postgres' ? { PRODUCTION_DATABASE_URL: t.urls.production! } : {}) };
    const keyed = await createTestApp({ env, ...(storeName === 'postgres' ? { openDb: { production: defaultOpenDb(testConfig(env), silentLog) } } : {}) });
    const db = keyed.db.production;
    try {
      await db.query("insert into signing_keys (purpose, secret) values ('subject_pseudonym', $1::text)", [LEGACY]);
      const person = chatId();
      const filed = await keyed.app.inject({ method: 'POST', url: '/reports/create', headers: { authorization: 'test-production-key-0123456789' }, payload: { report_id: `RV39K-${process.pid}`, reporter: person, reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' } });
      expect(filed.statusCode, filed.body).toBe(201);
      const director = await admin(keyed);
      // On PostgreSQL this file's database already erased under the suite's key: the operator adopts this one (`cli pseudonym-key --adopt`).
      await recordFingerprint(db, pseudonymKey(env.PRODUCTION_PSEUDONYM_KEY), true);
      const res = await keyed.app.inject({ method: 'POST', url: `/admin/subjects/${person}/erase`, headers: director.headers, payload: { reason: 'Asked', reference: 'RV39' } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().pseudonym).toBe(pseudonym(pseudonymKey(env.PRODUCTION_PSEUDONYM_KEY), person));
      expect((await db.query("select secret from signing_keys where purpose = 'subject_pseudonym'")).rows).toEqual([]);
    } finally {
      await keyed.close();
    }
  });
});

describe.runIf(storeName === 'postgres')('the retention on PostgreSQL without a pseudonym key', () => {
  let base: TestApp;
  let t: TestApp;
  beforeAll(async () => {
    base = await createTestApp();
    // An instance as deployed: PRODUCTION_DATABASE_URL set, PRODUCTION_PSEUDONYM_KEY not.
    const env = { RETENTION_DAYS: '7', PRODUCTION_DATABASE_URL: base.urls.production! };
    t = await createTestApp({ env, retentionIntervalMs: 20, openDb: { production: defaultOpenDb(testConfig(env), silentLog) } });
  });
  afterAll(async () => {
    await t.close();
    await base.close();
  });

  it('is not configured: health says so (not ok), not only a last_error detail', async () => {
    const director = await admin(t);
    let body: any;
    for (let i = 0; i < 50; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/admin/health', headers: director.headers });
      body = res.json();
      if (body.database?.retention?.last_error) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(body.database.retention.last_error).toMatch(/PSEUDONYM_KEY/);
    expect({ status: body.database.status, reasons: body.database.reasons }).toEqual({ status: expect.not.stringMatching(/^ok$/), reasons: [expect.stringMatching(/retention|PSEUDONYM_KEY/)] });
  });
});
