// Erasure in ordinary use (issue 39, findings 1 and 2), every fixture through the routes as the bot
// and the dashboards write it: the reporter of a report the bot filed with an evidence URL is
// erased (its first evidence row has no submitter, and its URL must stay a URL), and a person
// erased once who appears again is erased again, with a second record under the same pseudonym.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASURE_MARKER } from '../src/platform/audit-chain/personal-fields.js';
import { ERASED_URL } from '../src/admin/subjects/catalogue.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, type Person } from './helpers/identity.js';
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
});
