// The access export withholds other people (issue 39, finding 3), the cases an adversarial review
// of the first version found (each failed on it, on both stores): another person's identity or
// words, or staff's identity, reaching P's export through a deleted report's pre-image, an event's
// before and after, a timeline entry; and P's own name or a decision about P wrongly withheld.
// Every fixture through the routes; each case has its own P.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WITHHELD } from '../src/admin/subjects/disclose.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

describe(`the access export against other people's data, as reviewed, on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let staff: Person;
  let manager: Person;
  let n = 0;
  const newId = () => `RV39-${process.pid}-${++n}`;

  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) => {
    const res = await t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
    return res.json();
  };
  const exportOf = (id: string) => call('GET', `/admin/subjects/${id}`, director.headers);
  const leaks = (doc: { kinds: object }, secrets: string[]) => {
    const text = JSON.stringify(doc.kinds);
    return secrets.filter((s) => text.includes(s));
  };

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    staff = await signedIn(t, { rank: 'Senior Agent', clearance: 3, name: 'Wren Investigator' });
    manager = await signedIn(t, { rank: 'Agent', clearance: 4, name: 'Mona Manager' });
  });
  afterAll(() => t.close());

  it("a deleted report's pre-image: the reporter's delivered chat profile beyond the named fields, and the bot-filed evidence URL", async () => {
    const reporter = chatId();
    const p = chatId();
    const id = newId();
    await call('POST', '/reports/create', key, {
      report_id: id, reporter, reporter_name: 'Rhona Reporter', reported: p, reported_name: 'Pax Reported',
      reason: 'insults', notes: 'n', evidence: 'e', evidence_url: 'https://clips.example/rhona-home-recording-9931.mp4',
    });
    await call('POST', `/reports/${id}/chat-profiles`, key, {
      reporter: { chat_id: reporter, username: 'rhona_r', display_name: 'Rhona DisplayName', bio: 'Nurse in Leedsborough', email: 'rhona@mail.example', id: reporter },
      reported: { chat_id: p, username: 'pax_r' },
    });
    await call('DELETE', `/reports/${id}`, key, { reason: 'Duplicate' });
    const doc = await exportOf(p);
    expect(doc.kinds.deleted_reports.length).toBe(1);
    expect(leaks(doc, [reporter, 'Rhona', 'rhona_r', 'Leedsborough', 'rhona@mail.example', 'rhona-home-recording'])).toEqual([]);
  });

  it("a deleted report's pre-image: the content of a staff note about P is shown there as in the live case", async () => {
    const p = chatId();
    const id = newId();
    await call('POST', '/reports/create', key, { report_id: id, reporter: chatId(), reported: p, reported_name: 'Pia Deleted', reason: 'r', notes: 'n', evidence: 'e' });
    await call('PATCH', `/reports/${id}/update`, key, { assigned_agent: staff.agent.chat_id });
    await call('POST', `/reports/${id}/investigation/begin`, staff.headers);
    await call('POST', `/reports/${id}/notes`, staff.headers, { note: 'Pia was warned twice before.' });
    const live = await exportOf(p);
    expect(JSON.stringify(live.kinds.notes)).toContain('Pia was warned twice before.');
    await call('DELETE', `/reports/${id}`, director.headers, { reason: 'Filed in the wrong environment' });
    const doc = await exportOf(p);
    expect(JSON.stringify(doc.kinds.deleted_reports)).toContain('Pia was warned twice before.');
  });

  it("the contact.message_added event carries staff's message to the reporter of a case about P (the thread is withheld whole)", async () => {
    const reporter = chatId();
    const p = chatId();
    const id = newId();
    await call('POST', '/reports/create', key, { report_id: id, reporter, reporter_name: 'Rhona Reporter', reported: p, reported_name: 'Pax Reported', reason: 'r', notes: 'n', evidence: 'e' });
    await call('PATCH', `/reports/${id}/update`, key, { assigned_agent: staff.agent.chat_id });
    await call('POST', `/reports/${id}/investigation/begin`, staff.headers);
    await call('POST', `/reports/${id}/action`, staff.headers, { action: 'contact_reporter', reason: 'Thanks Rhona, did Pax Reported message you again after the ban on Tuesday?' });
    const doc = await exportOf(p);
    expect(doc.kinds.contact_messages).toEqual([]);
    expect(leaks(doc, ['Thanks Rhona', 'after the ban on Tuesday'])).toEqual([]);
  });

  it("a bot PATCH of a report about P: the reporter's old and new words in the report.updated event", async () => {
    const reporter = chatId();
    const p = chatId();
    const id = newId();
    await call('POST', '/reports/create', key, {
      report_id: id, reporter, reporter_name: 'Rhona Reporter', reported: p, reported_name: 'Pax Reported',
      reason: 'Quokkaword: he followed me home', notes: 'Quokkanotes', evidence: 'e',
    });
    await call('PATCH', `/reports/${id}/update`, key, { reason: 'Pax Reported followed me to 12 Oakfield Lane', notes: 'I am scared, my sister saw it too' });
    const doc = await exportOf(p);
    expect(doc.kinds.reports_as_reported[0].row.reason).toBe(WITHHELD);
    expect(leaks(doc, ['Quokkaword', 'Quokkanotes', 'Oakfield', 'my sister'])).toEqual([]);
  });

  it('the timeline names an assignee who never acted on the case (bot assignment), by name, or by chat id when unnamed', async () => {
    const p = chatId();
    const idNamed = newId();
    const idUnnamed = newId();
    const quiet = await signedIn(t, { rank: 'Agent', clearance: 2, name: 'Ulrich Unseen' });
    const unnamed = chatId();
    await call('POST', '/agents/create', key, { chat_id: unnamed, agent_rank: 'Agent', status: 'active' });
    for (const id of [idNamed, idUnnamed]) await call('POST', '/reports/create', key, { report_id: id, reporter: chatId(), reported: p, reported_name: 'Pol Assigned', reason: 'r', notes: 'n', evidence: 'e' });
    await call('PATCH', `/reports/${idNamed}/update`, key, { assigned_agent: quiet.agent.chat_id });
    await call('PATCH', `/reports/${idUnnamed}/update`, key, { assigned_agent: unnamed });
    const doc = await exportOf(p);
    const events = doc.kinds.timeline.map((e: { row: { event: string } }) => e.row.event);
    expect(leaks(doc, ['Ulrich Unseen', unnamed]), JSON.stringify(events)).toEqual([]);
  });

  it("a third party whose name is P's first name: P's own name and the decision about P are not withheld", async () => {
    const p = chatId();
    const id = newId();
    const id2 = newId();
    await call('POST', '/reports/create', key, { report_id: id, reporter: chatId(), reporter_name: 'Sam', reported: p, reported_name: 'Sam Jones', reason: 'r', notes: 'n', evidence: 'e' });
    await call('POST', '/reports/create', key, { report_id: id2, reporter: chatId(), reporter_name: 'Active', reported: p, reported_name: 'Sam Jones', reason: 'r', notes: 'n', evidence: 'e' });
    await call('POST', '/punishments', manager.headers, { user_id: p, reason: 'Harassment', duration: '7d', report_id: id });
    const doc = await exportOf(p);
    expect({
      names: doc.kinds.reports_as_reported.map((r: { row: { reported_name: string } }) => r.row.reported_name),
      status: doc.kinds.punishments[0].row.status,
    }).toEqual({ names: ['Sam Jones', 'Sam Jones'], status: 'Active' });
  });
});
