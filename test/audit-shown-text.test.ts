// GET /audit below supervisor rank: a row shown with less than it stores matches a search only by
// what it shows (issue 38, review of 020e2e6): a subject export's counts, with a full page so the
// count runs through its candidates, and a user lookup's person, withheld from everyone but the
// agent who asked, in its events' data.user_id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let director: Person;
let agent: Person;
let asker: Person;
let supervisor: Person;

const audit = async (query: string, headers: Record<string, string>) => {
  const res = await t.app.inject({ url: `/audit${query}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { total: number; total_capped: boolean; events: { type: string; data: Record<string, unknown> | null; after: unknown }[] };
};

beforeAll(async () => {
  t = await createTestApp();
  director = await admin(t);
  agent = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  asker = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
});
afterAll(() => t.close());

describe(`GET /audit: hidden text never matches below supervisor rank (${storeName})`, () => {
  it("a subject export's counts: no match by them, with a full page and with offsets", async () => {
    const x = chatId();
    // A flagged report of X's, and a few ordinary ones.
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({
        method: 'POST', url: '/reports/create', headers: key,
        payload: { report_id: `RVH-${process.pid}-${i}`, reporter: x, reported: chatId(), reason: 'r', notes: 'n', evidence: 'e', is_supervisor: i === 0 },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const exp = await t.app.inject({ url: `/admin/subjects/${x}`, headers: director.headers });
    expect(exp.statusCode, exp.body).toBe(200);
    const total = exp.json().total as number;
    const term = `"total": ${total}`;
    const sup = await audit(`?search=${encodeURIComponent(term)}`, supervisor.headers);
    expect(sup.events.some((e) => e.type === 'admin.subject_exported')).toBe(true);
    const unpaged = await audit(`?search=${encodeURIComponent(term)}&limit=500`, agent.headers);
    for (const q of ['', '&limit=1', '&limit=1&offset=1', '&event=subject', '&sort=event&limit=1', '&supervisor=exclude']) {
      const page = await audit(`?search=${encodeURIComponent(term)}${q}`, agent.headers);
      expect(page.events.filter((e) => e.type === 'admin.subject_exported'), q).toEqual([]);
      if (!q.includes('event=') && !q.includes('supervisor=')) expect(page.total, q).toBe(unpaged.total);
    }
    const counts = await audit(`?search=${encodeURIComponent('"reports_as_reporter": 3')}`, agent.headers);
    expect(counts).toMatchObject({ total: 0, events: [] });
  });

  it("a user lookup's person: another agent's search for the person's chat id does not find the lookup", async () => {
    const person = chatId();
    const req = await t.app.inject({ method: 'POST', url: '/discipline/user-lookup', headers: asker.headers, payload: { user_id: person } });
    expect(req.statusCode, req.body).toBe(201);
    const itemId = req.json().lookup.item_id;
    const claimed = await t.app.inject({ url: '/discipline/next', headers: key });
    expect(claimed.statusCode, claimed.body).toBe(200);
    const done = await t.app.inject({ method: 'POST', url: `/discipline/user-lookup/${itemId}/profile`, headers: key, payload: { chat_id: person, username: 'lookedup_user' } });
    expect(done.statusCode, done.body).toBe(200);
    // The asker finds it, with the person.
    const mine = await audit(`?search=${person}`, asker.headers);
    expect(mine.events.some((e) => e.data?.user_id === person)).toBe(true);
    // Another agent is not told who the lookup was about: their search by the person must not find it.
    const theirs = await audit(`?search=${person}`, agent.headers);
    expect({ total: theirs.total, types: theirs.events.map((e) => [e.type, e.data]) }).toEqual({ total: 0, types: [] });
    // Nor does a filter of the admin trail on the target it is not shown, for an administrator below supervisor rank.
    const senior = await admin(t, { rank: 'Senior Agent', clearance: 4 });
    const trail = async (who: Person) => (await t.app.inject({ url: `/admin/audit?target=${person}`, headers: who.headers })).json();
    expect(await trail(senior)).toEqual({ success: true, total: 0, rows: [] });
    expect((await trail(director)).rows).toEqual([expect.objectContaining({ action: 'discipline.user_lookup_requested', target: person })]);
  });
});
