// The pseudonym key lives outside the database and its backups (issue 39, finding 9): anyone with
// a backup could otherwise compute the pseudonym of a guessed chat id. <ENV>_PSEUDONYM_KEY when set;
// embedded, a file beside the data folder (moved there from the database when an earlier release
// kept it inside); on PostgreSQL without the variable an erasure answers 503 and writes nothing;
// and `cli pseudonym-key` prints the line to set, taking an earlier release's key out of the database.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configuredPseudonymKey, pseudonymKeyFile, recordFingerprint } from '../src/admin/subjects/subject-key.js';
import { pseudonym, pseudonymKey } from '../src/platform/audit-chain/personal-fields.js';
import { admin } from './helpers/admin.js';
import { createTestApp, silentLog, testConfig, type TestApp } from './helpers/app.js';
import { defaultOpenDb } from '../src/platform/environments.js';
import { chatId, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { SCRATCH, storeName } from './helpers/stores.js';
import { everyTable } from './helpers/tables.js';

const LEGACY = 'an-earlier-release-kept-this-key-in-the-database-0123';

describe(`the pseudonym key on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  const legacyRows = async () => (await t.db.production.query("select secret from signing_keys where purpose = 'subject_pseudonym'")).rows;
  const file = async (reporter: string) => {
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { report_id: `PK-${reporter}`, reporter, reported: chatId(), reason: 'r', notes: 'n', evidence: 'e' } });
    expect(res.statusCode, res.body).toBe(201);
  };
  const erase = (app: TestApp, id: string, who: Person) =>
    app.app.inject({ method: 'POST', url: `/admin/subjects/${id}/erase`, headers: who.headers, payload: { reason: 'Asked by email', reference: 'GDPR-PK' } });

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
  });
  afterAll(() => t.close());

  it('an erasure through the route leaves no key in the database', async () => {
    const person = chatId();
    await file(person);
    const res = await erase(t, person, director);
    expect(res.statusCode, res.body).toBe(200);
    expect(await legacyRows()).toEqual([]);
  });

  it('embedded: a file beside the data folder (mode 0600), the same key every time; an earlier release\'s key moves there', async () => {
    const dataDir = await mkdtemp(join(SCRATCH, 'pk-'));
    const source = { name: 'production' as const, config: { pseudonymKey: undefined, databaseUrl: undefined }, dataDir, db: t.db.production };
    // What an earlier release kept in signing_keys (the tampering-free way to have it: its own insert).
    await t.db.production.query("insert into signing_keys (purpose, secret) values ('subject_pseudonym', $1::text)", [LEGACY]);
    // Which key an instance has (the database's fingerprint of it: test/subjects-key-fingerprint.test.ts).
    const moved = await configuredPseudonymKey(source);
    expect(moved).toEqual(pseudonymKey(LEGACY));
    expect(await legacyRows()).toEqual([]);
    const path = pseudonymKeyFile(dataDir, 'production');
    expect(path).toBe(join(dataDir, 'production.pseudonym-key'));
    expect((await readFile(path, 'utf8')).trim()).toBe(LEGACY);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await configuredPseudonymKey(source)).toEqual(moved);
    // A new folder with nothing kept: a new key, written once.
    const fresh = { ...source, dataDir: await mkdtemp(join(SCRATCH, 'pk-')) };
    const made = await configuredPseudonymKey(fresh);
    expect(made).not.toEqual(moved);
    expect(await configuredPseudonymKey(fresh)).toEqual(made);
  });

  it('the variable wins wherever it is set', async () => {
    const source = { name: 'demo' as const, config: { pseudonymKey: 'the-operators-own-pseudonym-key-0123456789', databaseUrl: 'postgres://db.example/cms' }, dataDir: ':memory:', db: t.db.demo };
    expect(await configuredPseudonymKey(source)).toEqual(pseudonymKey('the-operators-own-pseudonym-key-0123456789'));
  });

  it.runIf(storeName === 'postgres')('on PostgreSQL without PRODUCTION_PSEUDONYM_KEY: 503 NOT_CONFIGURED and nothing written; with it, pseudonyms under that key', async () => {
    const person = chatId();
    await file(person);
    // Two more instances of the same database, as an operator runs them: one without the variable.
    const instance = (env: Record<string, string>) => createTestApp({ env, openDb: { production: defaultOpenDb(testConfig(env), silentLog) } });
    const url = t.urls.production!;
    const bare = await instance({ PRODUCTION_DATABASE_URL: url });
    const keyed = await instance({ PRODUCTION_DATABASE_URL: url, PRODUCTION_PSEUDONYM_KEY: 'the-operators-own-pseudonym-key-0123456789' });
    try {
      const before = await everyTable(t.db.production);
      const refused = await erase(bare, person, await admin(bare));
      expect(refused.statusCode, refused.body).toBe(503);
      expect(refused.json()).toEqual({ success: false, error: 'PRODUCTION_PSEUDONYM_KEY is not configured', code: 'NOT_CONFIGURED' });
      const after = await everyTable(t.db.production);
      // Signing in the director wrote its own rows; nothing of the person changed.
      expect(after.reports).toEqual(before.reports);
      expect(after.subject_erasures).toEqual(before.subject_erasures);
      // The operator gives this database the key (an earlier test erased under the suite's own):
      // `cli pseudonym-key --adopt`, the way test/subjects-key-fingerprint.test.ts checks.
      await recordFingerprint(t.db.production, pseudonymKey('the-operators-own-pseudonym-key-0123456789'), true);
      const done = await erase(keyed, person, await admin(keyed));
      expect(done.statusCode, done.body).toBe(200);
      expect(done.json().pseudonym).toBe(pseudonym(pseudonymKey('the-operators-own-pseudonym-key-0123456789'), person));
    } finally {
      await bare.close();
      await keyed.close();
    }
  });

  // Embedded, the CLI opens its own folder, whose key the first erasure moves (tested above).
  it.runIf(storeName === 'postgres')('cli pseudonym-key prints the line to set, taking an earlier release\'s key out of the database', async () => {
    await t.db.production.query("insert into signing_keys (purpose, secret) values ('subject_pseudonym', $1::text)", [LEGACY]);
    const env = { PRODUCTION_DATABASE_URL: t.urls.production! };
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, ['dist/src/cli.js', 'pseudonym-key', '--env', 'production'], { env: { ...process.env, ...env } });
    expect(stdout.trim()).toBe(`PRODUCTION_PSEUDONYM_KEY=${LEGACY}`);
    expect(await legacyRows()).toEqual([]);
    const again = await run(process.execPath, ['dist/src/cli.js', 'pseudonym-key', '--env', 'production'], { env: { ...process.env, ...env } });
    expect(again.stdout.trim()).toMatch(/^PRODUCTION_PSEUDONYM_KEY=[A-Za-z0-9_-]{43}$/);
    expect(again.stdout.trim()).not.toBe(`PRODUCTION_PSEUDONYM_KEY=${LEGACY}`);
  });
});
