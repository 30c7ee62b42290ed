// The id a subject access export gives an answer kept for an Idempotency-Key (issue 41). Found by
// the second review of the keyed-request change: an id that was md5 of the request's fingerprint
// (an unkeyed hash of method, route, path parameters and body) let the reported person confirm which
// agent a withheld assignment named, trying the organisation's agents one by one; and two requests
// alike under two keys had one id.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';

const bot = { authorization: PRODUCTION_KEY };
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const md5 = (s: string) => createHash('md5').update(s).digest('hex');

describe(`the export id of an answer kept for an Idempotency-Key, on ${storeName}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it("does not let the reported person confirm which agent a withheld assignment named (md5 of the request's fingerprint)", async () => {
    const person = chatId();
    const report_id = `IKX-ID-${process.pid}-${chatId()}`;
    const created = await t.app.inject({ method: 'POST', url: '/reports/create', headers: bot, payload: { report_id, reporter: chatId(), reported: person, reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' } });
    expect(created.statusCode, created.body).toBe(201);
    // Three agents of the organisation; the case is assigned to one of them, with a key (the bot).
    const agents = [await signedIn(t), await signedIn(t), await signedIn(t)].map((a) => a.agent.chat_id);
    const assignee = agents[1]!;
    const assigned = await t.app.inject({ method: 'PATCH', url: `/reports/${report_id}/update`, headers: { ...bot, 'idempotency-key': `assign-${chatId()}` }, payload: { assigned_agent: assignee } });
    expect(assigned.statusCode, assigned.body).toBe(200);

    const director = await admin(t);
    const exported = await t.app.inject({ url: `/admin/subjects/${person}`, headers: director.headers });
    expect(exported.statusCode, exported.body).toBe(200);
    const kinds = exported.json().kinds;
    // The export withholds who the case is assigned to ...
    expect(kinds.reports_as_reported[0].row.assigned_agent).toBe('[withheld]');
    const ids = (kinds.stored_answers as { id: string }[]).map((a) => a.id);
    expect(ids.length).toBeGreaterThan(0);
    // ... but the stored answer's id is a digest of a request whose only unknown is that agent.
    const fingerprint = (agent: string) =>
      sha256(canonicalize({ method: 'PATCH', route: '/reports/:report_id/update', params: { report_id }, body: { assigned_agent: agent } }) ?? '');
    const identified = agents.filter((a) => ids.includes(md5(fingerprint(a))));
    expect(identified, "the export's stored_answers id names the withheld assignee").toEqual([]);
  });

  it("gives each stored answer an id of its own (\"the row's id in its table\"): two requests alike under two keys are two rows", async () => {
    const person = chatId();
    const report_id = `IKX-ID2-${process.pid}-${chatId()}`;
    // Keyed too (as every request is under TEST_IDEMPOTENCY_KEYS): four answers kept.
    const filed = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...bot, 'idempotency-key': `file-${chatId()}` }, payload: { report_id, reporter: person, reported: chatId(), reason: 'Spam', notes: 'n', evidence: 'e' } });
    expect(filed.statusCode).toBe(201);
    // The same change sent twice under two keys (a client that made a new key for its retry): both write, both kept.
    for (const status of ['Pending', 'Open', 'Pending']) {
      const res = await t.app.inject({ method: 'PATCH', url: `/reports/${report_id}/update`, headers: { ...bot, 'idempotency-key': `status-${chatId()}` }, payload: { status } });
      expect(res.statusCode, res.body).toBe(200);
    }
    const director = await admin(t);
    const exported = await t.app.inject({ url: `/admin/subjects/${person}`, headers: director.headers });
    const ids = (exported.json().kinds.stored_answers as { id: string }[]).map((a) => a.id);
    expect(ids).toHaveLength(4);
    expect(new Set(ids).size, `ids ${ids.join(', ')}`).toBe(4);
  });
});
