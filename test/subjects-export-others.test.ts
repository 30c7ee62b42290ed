// The access export discloses no one else (issue 39, finding 3; GDPR article 15(4)), every fixture
// through the routes as the bot and staff write it: a reported person's export withholds the
// reporter's chat id, name and words, the contact thread between the reporter and staff, and who on
// staff acted, and keeps the decisions about them (the report's status, the punishment and its
// terms) and the content of staff notes about them; the reporter's export keeps their own words
// and staff's messages to them, and withholds the reported person.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WITHHELD } from '../src/admin/subjects/disclose.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

describe(`the access export withholds other people on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let staff: Person;
  let manager: Person;
  const reporter = chatId();
  const reported = chatId();
  const reportId = `EXP-${process.pid}`;
  let punishmentId: string;

  const call = async (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) => {
    const res = await t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
    return res.json();
  };
  const exportOf = (id: string) => call('GET', `/admin/subjects/${id}`, director.headers);

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    staff = await signedIn(t, { rank: 'Senior Agent', clearance: 3, name: 'Wren Investigator' });
    manager = await signedIn(t, { rank: 'Agent', clearance: 4, name: 'Mona Manager' });
    await call('POST', '/reports/create', key, {
      report_id: reportId, reporter, reporter_name: 'Rhona Reporter', reported, reported_name: 'Pax Reported',
      reason: 'Xylophrenic insults in voice', notes: 'Xylophrenic notes', evidence: 'Xylophrenic clip', evidence_url: 'https://clips.example/xylophrenic.mp4',
    });
    await call('POST', `/reports/${reportId}/chat-profiles`, key, { reporter: { chat_id: reporter, username: 'rhona_r' }, reported: { chat_id: reported, username: 'pax_r' } });
    await call('PATCH', `/reports/${reportId}/update`, key, { assigned_agent: staff.agent.chat_id });
    await call('POST', `/reports/${reportId}/investigation/begin`, staff.headers);
    await call('POST', `/reports/${reportId}/notes`, staff.headers, { note: 'Pax was abusive twice; warned before.' });
    await call('POST', `/reports/${reportId}/action`, staff.headers, { action: 'contact_reporter', reason: 'Thanks Rhona, can you say more?' });
    await call('POST', `/reports/${reportId}/contact/respond`, key, { body: 'Yes: Xylophrenic again last night', sender_name: 'Rhona Reporter' });
    punishmentId = (await call('POST', '/punishments', manager.headers, { user_id: reported, reason: 'Harassment', duration: '7d', report_id: reportId })).punishment.punishment_id;
  });
  afterAll(() => t.close());

  it("a reported person's export: the reporter, their words, the thread and staff withheld; decisions and notes about them kept", async () => {
    const doc = await exportOf(reported);
    const text = JSON.stringify(doc.kinds);
    for (const other of [reporter, 'Rhona', 'rhona_r', 'Xylophrenic', 'xylophrenic', staff.agent.chat_id, 'Wren Investigator', manager.agent.chat_id, 'Mona Manager', 'can you say more']) {
      expect(text, other).not.toContain(other);
    }
    const [report] = doc.kinds.reports_as_reported;
    expect(report.row).toMatchObject({
      report_id: reportId, reported, reported_name: 'Pax Reported', reporter: WITHHELD, reporter_name: WITHHELD, reason: WITHHELD,
      notes: WITHHELD, evidence: WITHHELD, evidence_url: WITHHELD, assigned_agent: WITHHELD, status: expect.any(String),
    });
    expect(doc.kinds.punishments.map((p: { row: object }) => p.row)).toEqual([
      expect.objectContaining({ punishment_id: punishmentId, user_id: reported, reason: 'Harassment', duration: '7d', status: 'Active', issued_by: WITHHELD, issued_by_name: WITHHELD }),
    ]);
    expect(doc.kinds.notes.map((n: { row: object }) => n.row)).toEqual([
      expect.objectContaining({ note: 'Pax was abusive twice; warned before.', author_chat_id: WITHHELD, author_name: WITHHELD }),
    ]);
    expect(doc.kinds.contact_messages).toEqual([]);
    expect(doc.kinds.chat_profiles.map((p: { row: object }) => p.row)).toEqual([expect.objectContaining({ chat_id: reported, username: 'pax_r' })]);
    // The thread, its two messages and the bot's send of the staff message are withheld whole.
    expect(doc.withheld).toMatchObject({ total: expect.any(Number), rows_withheld_whole: 4, why: expect.stringContaining('15(4)') });
    expect(doc.withheld.kinds.contact_messages).toEqual({ contact_of_others: 2 });
    expect(doc.withheld.kinds.contact_threads).toEqual({ contact_of_others: 1 });
    expect(doc.withheld.kinds.report_actions).toMatchObject({ contact_of_others: 1 });
    // The timeline says who it was assigned to: the name is withheld there too.
    expect(doc.kinds.timeline.map((e: { row: { event: string } }) => e.row.event)).toContain(`Assigned to ${WITHHELD}`);
    expect(doc.withheld.kinds.reports_as_reported).toMatchObject({ other_people: expect.any(Number), staff: 1 });
    expect(doc.total).toBe(Object.values(doc.kinds as Record<string, unknown[]>).flat().length);
  });

  it("the reporter's export: their words and staff's messages to them kept; the reported person and staff withheld", async () => {
    const doc = await exportOf(reporter);
    const text = JSON.stringify(doc.kinds);
    for (const other of [reported, 'Pax', 'pax_r', staff.agent.chat_id, 'Wren Investigator', 'abusive twice']) expect(text, other).not.toContain(other);
    expect(doc.kinds.reports_as_reporter[0].row).toMatchObject({ reporter, reporter_name: 'Rhona Reporter', reason: 'Xylophrenic insults in voice', reported: WITHHELD, reported_name: WITHHELD });
    expect(doc.kinds.contact_messages.map((m: { row: { body: string; sender_name: string } }) => [m.row.body, m.row.sender_name])).toEqual([
      ['Thanks Rhona, can you say more?', WITHHELD],
      ['Yes: Xylophrenic again last night', 'Rhona Reporter'],
    ]);
    expect(doc.kinds.punishments).toEqual([]);
  });
});
