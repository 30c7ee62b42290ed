// Erasure in ordinary use (issue 39, findings 1 and 2), every fixture through the routes as the bot
// and the dashboards write it: the reporter of a report the bot filed with an evidence URL is
// erased (its first evidence row has no submitter, and its URL must stay a URL), and a person
// erased once who appears again is erased again, with a second record under the same pseudonym;
// only the person's whole words go (finding 8): a name "Sam" is not part of "Samantha Staff"; and
// a person whose ban is not yet lifted on the chat platform is in force until it is (finding 6);
// and a chat profile's fields beyond the named ones go too (finding 7).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASURE_MARKER } from '../src/platform/audit-chain/personal-fields.js';
import { ERASED_URL } from '../src/admin/subjects/catalogue.js';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { queueNotificationsDelivered } from './helpers/app.js';
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

  it('refuses while a ban is not lifted yet: past its expiry but not swept, or its lifting delivery unfinished; erases once it is', async () => {
    const manager = await signedIn(t, { rank: 'Agent', clearance: 4, name: 'Mona Manager' });
    const person = chatId();
    const call = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) => t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    const deliver = async (kind: string) => {
      // The pickup sweeps what is due first, as every discipline pickup does.
      for (;;) {
        await queueNotificationsDelivered(t);
        const next = await call('GET', '/discipline/next', key);
        expect(next.statusCode, next.body).toBe(200);
        const item = next.json().item;
        expect(item).toMatchObject({ user_id: person });
        if (item.kind === kind) return item.item_id as number;
        // The lookup of their profile an issue asks for: the bot finds none.
        expect(item.kind).toBe('user_lookup');
        expect((await call('POST', `/discipline/${item.item_id}/complete`, key, { result: 'failed', note: 'no such user' })).statusCode).toBe(200);
      }
    };
    const complete = async (item: number, result: 'success' | 'failed') => expect((await call('POST', `/discipline/${item}/complete`, key, { result })).statusCode).toBe(200);
    const held = async (punishmentId: string) => {
      const res = await erase(person);
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toEqual({ success: false, error: expect.stringContaining(punishmentId), code: 'PUNISHMENT_IN_FORCE' });
    };
    // A ban that ends in a second, delivered by the bot.
    const timed = await call('POST', '/punishments', manager.headers, { user_id: person, reason: 'Spamming', expires_at: new Date(Date.now() + 1_000).toISOString() });
    expect(timed.statusCode, timed.body).toBe(201);
    const first = timed.json().punishment.punishment_id as string;
    await complete(await deliver('issue'), 'success');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    // Past its expiry, not yet swept (an erasure does not sweep): the platform still bans them.
    await held(first);
    // Swept at the bot's next pickup: its expire delivery is handed out, fails once, is requeued.
    const expiry = await deliver('expire');
    await held(first);
    await complete(expiry, 'failed');
    await held(first);
    expect((await call('POST', `/discipline/${expiry}/requeue`, manager.headers)).statusCode).toBe(200);
    await held(first);
    await complete(await deliver('expire'), 'success');

    // Another, revoked: held while its revoke delivery is pending.
    const other = await call('POST', '/punishments', manager.headers, { user_id: person, reason: 'Spamming again' });
    expect(other.statusCode, other.body).toBe(201);
    const second = other.json().punishment.punishment_id as string;
    await complete(await deliver('issue'), 'success');
    expect((await call('POST', `/punishments/${second}/revoke`, manager.headers, { reason: 'Appeal granted' })).statusCode).toBe(200);
    await held(second);
    await complete(await deliver('revoke'), 'success');

    // Lifted everywhere: erased, every delivery's target now their pseudonym (nothing left to deliver).
    const done = await erase(person);
    expect(done.statusCode, done.body).toBe(200);
    const alias = done.json().pseudonym as string;
    expect(await rows('select punishment_id, kind, status, user_id from discipline_deliveries where punishment_id = any($1::text[]) order by item_id', [[first, second]])).toEqual([
      { punishment_id: first, kind: 'issue', status: 'success', user_id: alias },
      { punishment_id: first, kind: 'expire', status: 'success', user_id: alias },
      { punishment_id: second, kind: 'issue', status: 'success', user_id: alias },
      { punishment_id: second, kind: 'revoke', status: 'success', user_id: alias },
    ]);
  });

  it("keeps another person's URL a URL: only whole words of the erased person's go, inside longer words nothing (review of issue 39)", async () => {
    const x = chatId();
    // X's own report, its evidence one common word; then Y reports X (named Max) with Y's clips.
    await file(x, 'Vorpalink', { evidence: 'video' });
    const y = chatId();
    const reportedBy = `ORD-${process.pid}-${++n}`;
    const filed = await t.app.inject({
      method: 'POST', url: '/reports/create', headers: key,
      payload: { report_id: reportedBy, reporter: y, reported: x, reported_name: 'Max', reason: 'Lag abuse', notes: 'n', evidence: 'e', evidence_url: 'https://video.example/Maximum-lag.mp4' },
    });
    expect(filed.statusCode, filed.body).toBe(201);
    const res = await erase(x);
    expect(res.statusCode, res.body).toBe(200);
    // "video" (all X wrote as evidence) goes where it is a word; "Max" inside "Maximum" stays.
    const erasedForm = `https://${ERASURE_MARKER}.example/Maximum-lag.mp4`;
    expect(await rows('select evidence_url, reported, reported_name from reports where report_id = $1::text', [reportedBy])).toEqual([
      { evidence_url: erasedForm, reported: res.json().pseudonym, reported_name: ERASURE_MARKER },
    ]);
    expect(await rows('select url, submitted_by from report_evidence where report_id = $1::text', [reportedBy])).toEqual([{ url: erasedForm, submitted_by: null }]);
  });

  it("erases a chat profile's fields beyond the named ones, in a deleted report's pre-image and its event", async () => {
    const person = chatId();
    const id = await file(person, 'Ordinary');
    const delivered = await t.app.inject({
      method: 'POST', url: `/reports/${id}/chat-profiles`, headers: key,
      payload: { reporter: { chat_id: person, username: 'glimmerfen', global_name: 'Glimmer Fen', bio: 'Collects Quokkabell figurines', id: 'ext-77123', badges: ['Quokkabell club'] } },
    });
    expect(delivered.statusCode, delivered.body).toBe(200);
    const deleted = await t.app.inject({ method: 'DELETE', url: `/reports/${id}`, headers: key, payload: { reason: 'Filed twice' } });
    expect(deleted.statusCode, deleted.body).toBe(200);
    const res = await erase(person);
    expect(res.statusCode, res.body).toBe(200);
    expect(await traces(t.db.production, [person, 'glimmerfen', 'Glimmer Fen', 'Quokkabell', 'ext-77123'])).toEqual([]);
  });
});
