// An erasure and the person's open user lookups (issue 39): a lookup asks the bot to capture the
// person's chat profile, which after an erasure would bring their data back. The erasure cancels
// their pending and claimed lookups (counted as user_lookups_cancelled): the bot no longer gets
// them from the queue, and a profile it delivers for one it had claimed is refused 409 (the lookup
// is over), storing nothing, where before the lookup's target had become the pseudonym and the bot
// was told 400 for its own chat id, every retry. And a punishment issued while the erasure waits for
// the person's rows is seen as in force (PostgreSQL: the check ran before the rows were locked).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { traces } from './helpers/erasure-checks.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key, reportCrudHelpers } from './helpers/reports.js';
import { onPostgres, storeName } from './helpers/stores.js';

describe(`an erasure and the person's open user lookups, on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let manager: Person;
  let n = 0;
  const erase = (id: string) =>
    t.app.inject({ method: 'POST', url: `/admin/subjects/${id}/erase`, headers: director.headers, payload: { reason: 'Deletion request by email', reference: `GDPR-LK-${++n}` } });
  const rows = async (sql: string, values: unknown[]) => (await t.db.production.query<Record<string, unknown>>(sql, values)).rows;
  const { createOk } = reportCrudHelpers(() => t);
  const reported = (person: string) => createOk({ reported: person, reported_name: 'Lookup Larkspur', reason: 'Spam' });
  async function lookup(person: string): Promise<string> {
    const res = await t.app.inject({ method: 'POST', url: '/discipline/user-lookup', headers: manager.headers, payload: { user_id: person } });
    expect(res.statusCode, res.body).toBe(201);
    return String(res.json().lookup.item_id);
  }

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    manager = await signedIn(t, { rank: 'Agent', clearance: 4 });
  });
  afterAll(() => t.close());

  it('cancels a claimed and a pending lookup of theirs: the profile the bot delivers is refused 409 and nothing is stored', async () => {
    const claimedPerson = chatId();
    const pendingPerson = chatId();
    await reported(claimedPerson);
    await reported(pendingPerson);
    const claimedId = await lookup(claimedPerson);
    const next = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(next.json().item).toMatchObject({ item_id: Number(claimedId), kind: 'user_lookup', user_id: claimedPerson, status: 'processing' });
    const pendingId = await lookup(pendingPerson);

    for (const [person, id] of [[claimedPerson, claimedId], [pendingPerson, pendingId]] as const) {
      const res = await erase(person);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().counts).toMatchObject({ user_lookups_cancelled: 1 });
      expect(await rows('select status, result_note, user_id from discipline_deliveries where item_id = $1::bigint', [id])).toEqual([
        { status: 'cancelled', result_note: 'The person was erased (subject erasure): their profile is not captured', user_id: res.json().pseudonym },
      ]);
    }
    // The bot delivers the profile it was asked for: the lookup is over, nothing is stored.
    const late = await t.app.inject({ method: 'POST', url: `/discipline/user-lookup/${claimedId}/profile`, headers: key, payload: { chat_id: claimedPerson, username: 'larkspur_late' } });
    expect(late.statusCode, late.body).toBe(409);
    expect(late.json()).toEqual({ success: false, error: `Discipline item ${claimedId} is already completed (status cancelled)`, code: 'DISCIPLINE_ALREADY_COMPLETED' });
    expect(await rows('select count(*)::int as n from chat_profiles where chat_id = $1::text', [claimedPerson])).toEqual([{ n: 0 }]);
    // The pending one is no longer handed out: the queue is empty.
    const after = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(after.statusCode, after.body).toBe(204);
    expect(await traces(t.db.production, [claimedPerson, pendingPerson, 'larkspur_late', 'Lookup Larkspur'])).toEqual([]);
  });

  it.runIf(onPostgres)('a punishment issued while the erasure waits for their rows is in force: 409, nothing erased', async () => {
    const person = chatId();
    const report = await reported(person);
    // Another transaction holds the person's report, so the erasure waits at its row locks.
    const pg = await import('pg');
    const other = new pg.default.Client({ connectionString: t.urls.production });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select 1 from reports where report_id = $1::text for update', [report]);
      const erasure = erase(person);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const issued = await t.app.inject({ method: 'POST', url: '/punishments', headers: manager.headers, payload: { user_id: person, reason: 'Harassment', duration: '7d' } });
      expect(issued.statusCode, issued.body).toBe(201);
      await other.query('commit');
      const res = await erasure;
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toMatchObject({ success: false, code: 'PUNISHMENT_IN_FORCE' });
      expect(await rows('select user_id from punishments where punishment_id = $1::text', [issued.json().punishment.punishment_id])).toEqual([{ user_id: person }]);
      expect(await rows('select reported from reports where report_id = $1::text', [report])).toEqual([{ reported: person }]);
    } finally {
      await other.end();
    }
  });
});
