// A chat profile is stored only through a report that names its chat id (found by the slow step's
// confidentiality model, seed 26937872: the reporter of a flagged report erased, then the bot
// delivered their profile through that report under their real chat id; nothing named them any
// more, so the profile escaped the report's flag and an Agent read it). The check runs on the
// locked report, so an erasure beside it cannot slip a party away in between.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { storeName } from './helpers/stores.js';

describe(`chat profiles only for the report's parties, on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let agent: Person;
  let n = 0;
  const call = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) => t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  const profiles = async (id: string) => (await t.db.production.query('select chat_id from chat_profiles where chat_id = $1::text', [id])).rows;
  const file = async (reporter: string, flagged: boolean) => {
    const report_id = `PP-${process.pid}-${++n}`;
    const res = await call('POST', '/reports/create', key, { report_id, reporter, reported: chatId(), reason: 'r', notes: 'n', evidence: 'e', is_supervisor: flagged });
    expect(res.statusCode, res.body).toBe(201);
    return report_id;
  };

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t);
    agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
  });
  afterAll(() => t.close());

  it('refuses a profile in a slot whose chat id is not that party, storing nothing', async () => {
    const reporter = chatId();
    const id = await file(reporter, false);
    const stranger = chatId();
    const res = await call('POST', `/reports/${id}/chat-profiles`, key, { reporter: { chat_id: stranger, username: 'not_the_reporter' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error: "body.reporter.chat_id is not the report's reporter", code: 'VALIDATION_ERROR' });
    expect(await profiles(stranger)).toEqual([]);
    expect((await call('POST', `/reports/${id}/chat-profiles`, key, { reporter: { chat_id: reporter, username: 'the_reporter' } })).statusCode).toBe(200);
  });

  it("an erased reporter's profile delivered again through their flagged report is refused, and no Agent reads it", async () => {
    const reporter = chatId();
    const id = await file(reporter, true);
    const erased = await call('POST', `/admin/subjects/${reporter}/erase`, director.headers, { reason: 'Asked', reference: 'GDPR-PP' });
    expect(erased.statusCode, erased.body).toBe(200);
    const res = await call('POST', `/reports/${id}/chat-profiles`, key, { reporter: { chat_id: reporter, username: 'CANARY-erased-again' } });
    expect(res.statusCode).toBe(400);
    expect(await profiles(reporter)).toEqual([]);
    const read = await call('GET', `/punishments/users/${reporter}/profile`, agent.headers);
    expect(read.body).not.toContain('CANARY-erased-again');
  });
});
