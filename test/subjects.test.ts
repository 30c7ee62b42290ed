// Subject access and erasure (issue 32): GET /admin/subjects/<chat_id> lists every planted row
// naming the person, kind by kind; POST /admin/subjects/<chat_id>/erase leaves no trace of their
// chat id, names or words in any text or jsonb column of any table (read from the catalog), keeps
// what the organisation decided and a bystander's rows, and a second erasure changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASURE_MARKER, isPseudonym } from '../src/platform/audit-chain/personal-fields.js';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { admin, expectAdminTrail } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';
import { plantSubject, type Planted } from './helpers/subjects.js';
import { everyTable } from './helpers/tables.js';
import { sealedAndVerified, traces } from './helpers/erasure-checks.js';

describe(`subject access and erasure on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let staff: Person;
  let planted: Planted;
  const other = chatId();
  const exportOf = (id: string, headers = director.headers) => t.app.inject({ method: 'GET', url: `/admin/subjects/${id}`, headers });
  const erase = (id: string, payload: object = { reason: 'Deletion request by email', reference: 'GDPR-2026-001' }) =>
    t.app.inject({ method: 'POST', url: `/admin/subjects/${id}/erase`, headers: director.headers, payload });

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    staff = await signedIn(t, { rank: 'Supervisor', clearance: 3, name: 'Sam Staff' });
    planted = await plantSubject(t.db.production, chatId(), { chat_id: staff.agent.chat_id, name: staff.agent.name }, other);
  });
  afterAll(() => t.close());

  it('exports every planted row, each kind with its ids and times, and records the export', async () => {
    const res = await exportOf(planted.chatId);
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc).toMatchObject({ success: true, chat_id: planted.chatId, exported_at: expect.stringMatching(/Z$/), correlation_id: expect.any(String) });
    const got = Object.fromEntries(Object.entries(doc.kinds as Record<string, { id: string }[]>).filter(([, rows]) => rows.length > 0).map(([k, rows]) => [k, rows.map((r) => r.id).sort()]));
    const expected = Object.fromEntries(Object.entries(planted.expected).map(([k, ids]) => [k, [...ids].sort()]));
    expect(got).toEqual(expected);
    expect(doc.total).toBe(Object.values(expected).flat().length);
    for (const rows of Object.values(doc.kinds as Record<string, { at: string | null; row: object }[]>)) {
      for (const row of rows) expect(row).toEqual({ id: expect.any(String), at: expect.stringMatching(/Z$/), row: expect.any(Object) });
    }
    expect(doc.kinds.reports_as_reporter[0].row).toMatchObject({ reporter: planted.chatId, reason: expect.stringContaining('Zorblax') });
    const { audit } = await expectAdminTrail(t, doc.correlation_id, {
      action: 'admin.subject_exported', actor: director.agent.chat_id, target: planted.chatId, reason: 'Subject access request: everything held about the chat id exported',
    });
    expect(audit.after).toEqual({ total: doc.total, counts: Object.fromEntries(Object.entries(expected).map(([k, ids]) => [k, ids.length])) });
  });

  it("exports a staff member's agent row, sessions (without the token's hash) and what they did", async () => {
    const doc = (await exportOf(staff.agent.chat_id)).json();
    expect(doc.kinds.agent.map((r: { id: string }) => r.id)).toEqual([staff.agent.chat_id]);
    expect(doc.kinds.sessions).toHaveLength(1);
    expect(Object.keys(doc.kinds.sessions[0].row).sort()).toEqual(['chat_id', 'created_at', 'expires_at']);
    expect(doc.kinds.reports_assigned.length).toBeGreaterThanOrEqual(3);
    expect(doc.kinds.punishments).toHaveLength(1);
  });

  it('refuses a chat id that is not 1 to 20 digits with 400', async () => {
    for (const bad of ['abc', '123456789012345678901', '12a']) {
      const res = await exportOf(bad);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ success: false });
    }
  });

  it('erases the person everywhere: no chat id, name or word of theirs left in any text or json column', async () => {
    // Each export of them left an audit row and an event naming them: erased too.
    const exports = (await t.db.production.query<{ n: number }>(
      "select count(*)::int as n from audit_log where action = 'admin.subject_exported' and target = $1::text", [planted.chatId])).rows[0]!.n;
    const checkpoint = await sealedAndVerified(t.db.production);
    const before = await everyTable(t.db.production);
    const res = await erase(planted.chatId);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, erasure_id: expect.any(String), reference: 'GDPR-2026-001', correlation_id: expect.any(String) });
    expect(isPseudonym(body.pseudonym)).toBe(true);
    expect(body.counts).toEqual({
      reports: 2, report_notes: 1, report_evidence: 1, report_timeline: 1, contact_messages: 1, report_actions: 1, chat_profiles: 1,
      punishments: 1, discipline_deliveries: 2, deleted_reports: 1, events: 3 + exports, audit_log: 1 + exports,
    });
    expect(await traces(t.db.production, planted.secrets)).toEqual([]);
    // The audit chain still verifies, with and without the checkpoint taken before, and names the erasure.
    const erasedRows = 3 + exports + 1 + exports;
    expect(await sealedAndVerified(t.db.production)).toMatchObject({ erased: [{ reference: 'GDPR-2026-001', rows: erasedRows }] });
    expect(await verifyChain(t.db.production, { against: checkpoint.head })).toMatchObject({ ok: true, checkpointAt: checkpoint.rows });

    const q = async (sql: string, values: unknown[]) => (await t.db.production.query<Record<string, unknown>>(sql, values)).rows;
    const [filed] = await q('select * from reports where report_id = $1::text', [planted.expected.reports_as_reporter![0]]);
    expect(filed).toMatchObject({ reporter: body.pseudonym, reporter_name: ERASURE_MARKER, reason: ERASURE_MARKER, status: 'Open', assigned_agent: staff.agent.chat_id });
    const [against] = await q('select * from reports where report_id = $1::text', [planted.expected.reports_as_reported![0]]);
    expect(against).toMatchObject({ reporter: other, reported: body.pseudonym, reported_name: ERASURE_MARKER, reason: 'They spammed', reporter_name: 'Other Person' });
    const [punishment] = await q('select * from punishments where punishment_id = $1::text', [planted.expected.punishments![0]]);
    expect(punishment).toMatchObject({ user_id: body.pseudonym, username: ERASURE_MARKER, status: 'Revoked', issued_by: staff.agent.chat_id, issued_by_name: 'Sam Staff', revoke_reason: 'Appeal upheld' });
    expect(punishment!.reason).toBe(`Spam reported by others against ${body.pseudonym}`);
    const [note] = await q('select * from report_notes where id = $1::bigint', [planted.expected.notes![0]]);
    expect(note).toMatchObject({ author_chat_id: staff.agent.chat_id, author_name: 'Sam Staff', note: `Spoke with ${body.pseudonym} (${ERASURE_MARKER}); they said "${ERASURE_MARKER}"` });
    expect(await q('select * from chat_profiles where chat_id = any($1::text[])', [[planted.chatId, body.pseudonym]])).toEqual([]);

    // What names no one else changed: the bystander's report, note and event are as they were.
    const after = await everyTable(t.db.production);
    const keep = (table: string, needle: string) => [before[table]!.filter((r) => r.includes(needle)), after[table]!.filter((r) => r.includes(needle))];
    for (const [table, needle] of [['reports', planted.bystander.reportId], ['report_notes', '"Unrelated"'], ['events', `"id":${planted.bystander.eventId},`]] as const) {
      const [was, is] = keep(table, needle);
      expect(is).toEqual(was);
      expect(is).toHaveLength(1);
    }

    const [record] = await q('select * from subject_erasures where id = $1::bigint', [body.erasure_id]);
    expect(record).toMatchObject({ pseudonym: body.pseudonym, reason: 'Deletion request by email', reference: 'GDPR-2026-001', actor_kind: 'agent', actor_chat_id: director.agent.chat_id, counts: body.counts });
    const { audit } = await expectAdminTrail(t, body.correlation_id, { action: 'admin.subject_erased', actor: director.agent.chat_id, target: body.pseudonym, reason: 'Deletion request by email' });
    expect(audit.after).toEqual({ erasure_id: body.erasure_id, reference: 'GDPR-2026-001', counts: body.counts, fields: expect.any(Array) });
    // The record names exactly the fields of sealed rows the erasure marked erased (verify-audit looks there, issue 39).
    const marked = await q(
      `select s.source, s.row_id::int as id, e.key as pointer, e.value->>'value' as value from audit_seal_salts s cross join lateral jsonb_each(s.erased) e
        where e.value->>'erasure' = $1::text order by 1, 2, 3`,
      [body.erasure_id],
    );
    expect(marked.length).toBeGreaterThan(0);
    const byPlace = (a: unknown[], b: unknown[]) => String(a.slice(0, 3)).localeCompare(String(b.slice(0, 3)));
    expect([...(audit.after as { fields: unknown[][] }).fields].sort(byPlace)).toEqual(marked.map((r) => [r.source, r.id, r.pointer, r.value]).sort(byPlace));
    expect(JSON.stringify(audit)).not.toContain(planted.chatId);
  });

  it('a second erasure of the same person changes nothing and answers zero counts', async () => {
    // Beside the answer kept for the request's Idempotency-Key, when it carries one
    // (TEST_IDEMPOTENCY_KEYS): the key's record, not a change; the erasure locks rows, which
    // counts as writing (docs/decisions.md).
    const data = async () => {
      const { idempotency_keys: _kept, ...tables } = await everyTable(t.db.production);
      return tables;
    };
    const before = await data();
    const res = await erase(planted.chatId, { reason: 'Asked again', reference: 'GDPR-2026-002' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, erasure_id: null, counts: {}, correlation_id: null });
    expect(await data()).toEqual(before);
  });

  it('refuses with 409 PUNISHMENT_IN_FORCE while a punishment is Active or Appealed (past its expiry too, until swept), writing nothing', async () => {
    const person = chatId();
    await t.db.production.query(
      `insert into punishments (punishment_id, user_id, username, reason, status, expires_at) values
         ('QQ1QQ1', $1::text, 'held_name', 'Spam', 'Appealed', now() + interval '1 day'),
         ('QQ2QQ2', $1::text, 'held_name', 'Old', 'Active', now() - interval '1 day')`,
      [person],
    );
    await erase(chatId()); // creates the environment's pseudonym key, if no test before did
    const before = await everyTable(t.db.production);
    const res = await erase(person);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, error: expect.stringContaining('QQ1QQ1'), code: 'PUNISHMENT_IN_FORCE' });
    expect(await everyTable(t.db.production)).toEqual(before);
  });

  it('refuses to erase an agent with 409 SUBJECT_IS_STAFF, writing nothing', async () => {
    const before = await everyTable(t.db.production);
    const res = await erase(staff.agent.chat_id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ success: false, code: 'SUBJECT_IS_STAFF' });
    expect(await everyTable(t.db.production)).toEqual(before);
  });
});
