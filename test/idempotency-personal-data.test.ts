// The answers kept for Idempotency-Key (issue 41) must not give away the staff member an export
// withholds, nor link an erased chat id to its pseudonym (found by the review of b8d2c23).
import { createHash, randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';

type Row = Record<string, any>;

describe(`answers kept for Idempotency-Key in subject access and erasure, on ${storeName}`, () => {
  let t: TestApp;
  let manager: Person;
  let n = 0;
  beforeAll(async () => {
    t = await createTestApp();
    manager = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  });
  afterAll(() => t?.close());
  const newReport = (reporter: string) => ({ report_id: `IKP-${process.pid}-${++n}`, reporter, reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' });

  it("an export's stored answer withholds the staff member who asked: its id does not give them away (md5 of their scope and the key, which the row shows)", async () => {
    const person = chatId();
    const key = randomUUID();
    const filed = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...manager.headers, 'idempotency-key': key }, payload: newReport(person) });
    expect(filed.statusCode).toBe(201);
    const director = await admin(t);
    const exported = await t.app.inject({ url: `/admin/subjects/${person}`, headers: director.headers });
    expect(exported.statusCode, exported.body).toBe(200);
    const [kept] = exported.json().kinds.stored_answers as { id: string; row: Row }[];
    expect(kept!.row.scope).toBe('[withheld]');
    // The key is the client's, and finds the row for the erasure: not part of the export.
    expect(kept!.row).not.toHaveProperty('key');
    expect(JSON.stringify(exported.json().kinds)).not.toContain(key);
    // The staff they can name (the organisation's agents are no secret to its members): does the
    // id tell which of them asked, even to someone who knows the key?
    const candidates = [director.agent.chat_id, manager.agent.chat_id, chatId()];
    const md5 = (s: string) => createHash('md5').update(s).digest('hex');
    const identified = candidates.filter((c) => md5(`agent:${c} ${key}`) === kept!.id || kept!.id.includes(c));
    expect(identified, `the export's id ${kept!.id} names the withheld staff member`).toEqual([]);
  });

  it('a keyed erasure leaves nothing that links the erased chat id to its pseudonym: the kept answer of the erasure itself', async () => {
    const person = chatId();
    const director = await admin(t);
    const filed = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...manager.headers, 'idempotency-key': randomUUID() }, payload: newReport(person) });
    expect(filed.statusCode).toBe(201);
    const body = { reason: 'Deletion request', reference: `GDPR-IKP-${process.pid}-${++n}` };
    const erasureKey = randomUUID();
    const erase = () => t.app.inject({ method: 'POST', url: `/admin/subjects/${person}/erase`, headers: { ...director.headers, 'idempotency-key': erasureKey }, payload: body });
    const erased = await erase();
    expect(erased.statusCode, erased.body).toBe(200);
    const pseudonym = erased.json().pseudonym as string;
    // Whoever holds the database (a backup) and guesses a chat id: the erasure's reason and
    // reference are in subject_erasures beside the pseudonym; the kept answers' fingerprints are
    // unkeyed hashes of the request, the chat id in its path.
    const [record] = (await t.db.production.query<Row>('select reason, reference from subject_erasures where pseudonym = $1', [pseudonym])).rows;
    const fingerprint = createHash('sha256')
      .update(canonicalize({ method: 'POST', route: '/admin/subjects/:chat_id/erase', params: { chat_id: person }, body: { reason: record!.reason, reference: record!.reference } }) ?? '')
      .digest('hex');
    const linked = (await t.db.production.query<Row>('select status, body from idempotency_keys where fingerprint = $1', [fingerprint])).rows;
    expect(linked.map((r) => ({ status: r.status, namesPseudonym: String(r.body).includes(pseudonym) })), 'a kept answer whose fingerprint is the erased chat id\'s erasure').toEqual([]);
    expect((await t.db.production.query<Row>('select 1 from idempotency_keys where key = $1', [erasureKey])).rows).toEqual([]);
    // Its retry (the answer lost) runs again: the erasure is done, nothing is left to erase.
    const retry = await erase();
    expect({ status: retry.statusCode, replayed: retry.headers['idempotent-replayed'] }).toEqual({ status: 200, replayed: undefined });
    expect(retry.json()).toMatchObject({ success: true, pseudonym, erasure_id: null, counts: {} });
  });
});
