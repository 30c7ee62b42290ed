// Erasure in ordinary use (issue 39, findings 1 and 2), every fixture through the routes as the bot
// and the dashboards write it: the reporter of a report the bot filed with an evidence URL is
// erased (its first evidence row has no submitter, and its URL must stay a URL), and a person
// erased once who appears again is erased again, with a second record under the same pseudonym;
// and only the person's whole words go (finding 8): a name "Sam" is not part of "Samantha Staff".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASURE_MARKER } from '../src/platform/audit-chain/personal-fields.js';
import { ERASED_URL } from '../src/admin/subjects/catalogue.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';
import { traces } from './helpers/erasure-checks.js';

describe(`erasure in ordinary use on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let n = 0;
  const erase = (id: string) =>
    t.app.inject({ method: 'POST', url: `/admin/subjects/${id}/erase`, headers: director.headers, payload: { reason: 'Deletion request by email', reference: `GDPR-39-${++n}` } });
  const file = async (reporter: string, words: string, extra: Record<string, unknown> = {}) => {
    const report_id = `ORD-${process.pid}-${++n}`;
    const res = await t.app.inject({
      method: 'POST', url: '/reports/create', headers: key,
      payload: { report_id, reporter, reported: chatId(), reason: `${words} in voice chat`, notes: `${words} notes`, evidence: `${words} clip`, ...extra },
    });
    expect(res.statusCode, res.body).toBe(201);
    return report_id;
  };
  const rows = async (sql: string, values: unknown[]) => (await t.db.production.query<Record<string, unknown>>(sql, values)).rows;

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
  });
  afterAll(() => t.close());

  it('erases the reporter of a report the bot filed with an evidence URL: the URL becomes the erased URL', async () => {
    const reporter = chatId();
    const url = `https://clips.example/${reporter}/quasarwhisk.mp4`;
    const id = await file(reporter, 'Quasarwhisk', { evidence_url: url });
    // The bot's report writes its first evidence row itself, with no submitter.
    expect(await rows('select url, submitted_by from report_evidence where report_id = $1::text', [id])).toEqual([{ url, submitted_by: null }]);

    const res = await erase(reporter);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ success: true, erasure_id: expect.any(String), counts: expect.objectContaining({ reports: 1, report_evidence: 1 }) });
    // Its description is the service's own words.
    expect(await rows('select description, url, submitted_by from report_evidence where report_id = $1::text', [id])).toEqual([
      { description: 'Initial evidence', url: ERASED_URL, submitted_by: null },
    ]);
    const [report] = await rows('select reporter, reason, evidence, evidence_url from reports where report_id = $1::text', [id]);
    expect(report).toEqual({ reporter: res.json().pseudonym, reason: ERASURE_MARKER, evidence: ERASURE_MARKER, evidence_url: ERASED_URL });
    expect(await traces(t.db.production, [reporter, 'Quasarwhisk', url])).toEqual([]);
  });

  it('erases a person again after they appear again: a second record under the same pseudonym', async () => {
    const person = chatId();
    await file(person, 'Zephyrlode');
    const first = await erase(person);
    expect(first.statusCode, first.body).toBe(200);
    const alias = first.json().pseudonym as string;
    // They report again after the erasure.
    const again = await file(person, 'Marrowquill');
    const second = await erase(person);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toMatchObject({ success: true, pseudonym: alias, erasure_id: expect.any(String), counts: expect.objectContaining({ reports: 1 }) });
    expect(second.json().erasure_id).not.toBe(first.json().erasure_id);
    expect(await rows('select id::text, reference from subject_erasures where pseudonym = $1::text order by id', [alias])).toEqual([
      { id: first.json().erasure_id, reference: first.json().reference },
      { id: second.json().erasure_id, reference: second.json().reference },
    ]);
    expect(await rows('select reporter, reason from reports where report_id = $1::text', [again])).toEqual([{ reporter: alias, reason: ERASURE_MARKER }]);
    expect(await traces(t.db.production, [person, 'Zephyrlode', 'Marrowquill'])).toEqual([]);
  });

  it('erases whole words only: a name or a word of theirs inside a longer word stays, staff names and notes included', async () => {
    const reporter = chatId();
    const samantha = await signedIn(t, { rank: 'Supervisor', clearance: 3, name: 'Samantha Staff' });
    const id = await file(reporter, 'Ordinary', { reporter_name: 'Sam', reason: 'spam' });
    // Assigned to her by the bot, she opens an investigation and notes it, as the dashboard does.
    const assign = await t.app.inject({ method: 'PATCH', url: `/reports/${id}/update`, headers: key, payload: { assigned_agent: samantha.agent.chat_id } });
    expect(assign.statusCode, assign.body).toBe(200);
    const begin = await t.app.inject({ method: 'POST', url: `/reports/${id}/investigation/begin`, headers: samantha.headers });
    expect(begin.statusCode, begin.body).toBe(200);
    const note = await t.app.inject({ method: 'POST', url: `/reports/${id}/notes`, headers: samantha.headers, payload: { note: 'Samantha: spamming again; Sam says spam.' } });
    expect(note.statusCode, note.body).toBe(201);
    const res = await erase(reporter);
    expect(res.statusCode, res.body).toBe(200);
    expect(await rows('select note, author_name from report_notes where report_id = $1::text', [id])).toEqual([
      { note: `Samantha: spamming again; ${ERASURE_MARKER} says ${ERASURE_MARKER}.`, author_name: 'Samantha Staff' },
    ]);
    // The staff member's name stays in the trail: the event of their note is theirs.
    expect(await rows("select actor_name from events where report_id = $1::text and type = 'report.note_added'", [id])).toEqual([{ actor_name: 'Samantha Staff' }]);
    expect(await rows('select reporter_name, reason from reports where report_id = $1::text', [id])).toEqual([{ reporter_name: ERASURE_MARKER, reason: ERASURE_MARKER }]);
  });
});
