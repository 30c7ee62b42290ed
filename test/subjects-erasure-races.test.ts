// Found by the second adversarial review of issue 39, failing before the fix:
//   - an erasure racing the bot's profile delivery for a lookup it had claimed. The profile route
//     locks the lookup, then stores the profile; an erasure that started meanwhile read
//     chat_profiles before it waited at the lookup's row lock, so the profile committed while it
//     waited survived it (PostgreSQL). The erasure now locks the person's lookups first.
//   - after an erasure, the pseudonym was the bot's target: a failed lookup of the person, which
//     now names the pseudonym, could be requeued and handed out, and a lookup could be asked for a
//     pseudonym. The erasure cancels failed lookups too; a pseudonym is refused 400 as a target,
//     of a lookup and of a punishment (whose delivery, and lookup, would send the bot after it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { traces } from './helpers/erasure-checks.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { onPostgres, storeName } from './helpers/stores.js';

describe(`an erasure and a profile delivery under way, on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let manager: Person;
  let n = 0;
  const erase = (id: string) =>
    t.app.inject({ method: 'POST', url: `/admin/subjects/${id}/erase`, headers: director.headers, payload: { reason: 'Deletion request by email', reference: `GDPR-RACE-${++n}` } });

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    manager = await signedIn(t, { rank: 'Agent', clearance: 4 });
  });
  afterAll(() => t.close());

  it.runIf(onPostgres)('a profile the bot is storing while the erasure starts is erased too (or refused), not left with the chat id', async () => {
    const person = chatId();
    const report_id = `RACE-${process.pid}-${++n}`;
    const filed = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { report_id, reporter: chatId(), reported: person, reported_name: 'Race Rosemary', reason: 'Spam', notes: 'n', evidence: 'e' } });
    expect(filed.statusCode, filed.body).toBe(201);
    const requested = await t.app.inject({ method: 'POST', url: '/discipline/user-lookup', headers: manager.headers, payload: { user_id: person } });
    expect(requested.statusCode, requested.body).toBe(201);
    const itemId = String(requested.json().lookup.item_id);
    const next = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(next.json().item).toMatchObject({ item_id: Number(itemId), status: 'processing' });

    const pg = await import('pg');
    const other = new pg.default.Client({ connectionString: t.urls.production });
    await other.connect();
    try {
      // Only to slow the profile route down after it locked the lookup: an uncommitted insert of the
      // same chat id makes its upsert wait (rolled back below, so it leaves nothing).
      await other.query('begin');
      await other.query('insert into chat_profiles (chat_id) values ($1::text)', [person]);
      const delivered = t.app.inject({ method: 'POST', url: `/discipline/user-lookup/${itemId}/profile`, headers: key, payload: { chat_id: person, username: 'rosemary_race', global_name: 'Race Rosemary' } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const erasure = erase(person);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await other.query('rollback');
      const [profile, res] = await Promise.all([delivered, erasure]);
      expect(res.statusCode, res.body).toBe(200);
      // Either the profile was refused, or it was erased with the rest: no row keeps their chat id or name.
      expect({ profile: profile.statusCode, traces: await traces(t.db.production, [person, 'rosemary_race', 'Race Rosemary']) }).toMatchObject({ traces: [] });
    } finally {
      await other.end();
    }
  });
});

describe(`after an erasure, the pseudonym is never the bot's target, on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let manager: Person;
  let n = 0;

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    manager = await signedIn(t, { rank: 'Agent', clearance: 4 });
  });
  afterAll(() => t.close());

  it('a failed lookup of the erased person, requeued, and a lookup asked for the pseudonym, are not handed to the bot', async () => {
    const person = chatId();
    const requested = await t.app.inject({ method: 'POST', url: '/discipline/user-lookup', headers: manager.headers, payload: { user_id: person } });
    expect(requested.statusCode, requested.body).toBe(201);
    const itemId = String(requested.json().lookup.item_id);
    const claimed = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(claimed.json().item).toMatchObject({ item_id: Number(itemId) });
    const failed = await t.app.inject({ method: 'POST', url: `/discipline/${itemId}/complete`, headers: key, payload: { result: 'failed', note: 'user not found' } });
    expect(failed.statusCode, failed.body).toBe(200);
    expect(failed.json().item.status).toBe('failed');

    const erased = await t.app.inject({ method: 'POST', url: `/admin/subjects/${person}/erase`, headers: director.headers, payload: { reason: 'Asked', reference: `GDPR-RACEP-${++n}` } });
    expect(erased.statusCode, erased.body).toBe(200);
    const alias: string = erased.json().pseudonym;

    // The failed lookup now targets the pseudonym (a 20-digit number, as a chat id is): requeued, the
    // bot is sent to look up "0…", and the profile it delivers for that id is stored under the pseudonym.
    const requeued = await t.app.inject({ method: 'POST', url: `/discipline/${itemId}/requeue`, headers: manager.headers });
    const next = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    const profile = await t.app.inject({ method: 'POST', url: `/discipline/user-lookup/${itemId}/profile`, headers: key, payload: { chat_id: alias, username: 'someone_else' } });
    // A lookup asked for a pseudonym directly (another erased person's, copied from a case).
    const other = chatId();
    await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { report_id: `RACEP-${process.pid}-${++n}`, reporter: chatId(), reported: other, reason: 'Spam', notes: 'n', evidence: 'e' } });
    const erasedOther = await t.app.inject({ method: 'POST', url: `/admin/subjects/${other}/erase`, headers: director.headers, payload: { reason: 'Asked', reference: `GDPR-RACEP-${++n}` } });
    expect(erasedOther.statusCode, erasedOther.body).toBe(200);
    const asked = await t.app.inject({ method: 'POST', url: '/discipline/user-lookup', headers: manager.headers, payload: { user_id: erasedOther.json().pseudonym } });
    expect({
      requeue: requeued.statusCode,
      handedOut: next.statusCode === 200 ? next.json().item.user_id : null,
      profile: profile.statusCode,
      ask: asked.statusCode,
      profilesUnderPseudonym: (await t.db.production.query('select chat_id from chat_profiles where chat_id = $1::text', [alias])).rows.length,
    }).toEqual({ requeue: 409, handedOut: null, profile: 409, ask: 400, profilesUnderPseudonym: 0 });
  });

  it('a punishment issued against a pseudonym is refused 400, nothing written', async () => {
    const person = chatId();
    await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: { report_id: `RACEQ-${process.pid}-${++n}`, reporter: chatId(), reported: person, reason: 'Spam', notes: 'n', evidence: 'e' } });
    const erased = await t.app.inject({ method: 'POST', url: `/admin/subjects/${person}/erase`, headers: director.headers, payload: { reason: 'Asked', reference: `GDPR-RACEQ-${++n}` } });
    expect(erased.statusCode, erased.body).toBe(200);
    const alias: string = erased.json().pseudonym;
    const count = async (sql: string) => (await t.db.production.query<{ n: number }>(sql, [alias])).rows[0]!.n;
    const before = [await count('select count(*)::int as n from punishments where user_id = $1::text'), await count('select count(*)::int as n from discipline_deliveries where user_id = $1::text')];
    const res = await t.app.inject({ method: 'POST', url: '/punishments', headers: manager.headers, payload: { user_id: alias, reason: 'Harassment', duration: '7d' } });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ success: false, error: `body.user_id ${alias} is the pseudonym of an erased person, not a chat id`, code: 'VALIDATION_ERROR' });
    expect([await count('select count(*)::int as n from punishments where user_id = $1::text'), await count('select count(*)::int as n from discipline_deliveries where user_id = $1::text')]).toEqual(before);
  });
});
