// POST /reports/<report_id>/chat-profiles (spec: Reports): profile snapshots upserted by chat id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { key, reportCrudHelpers, type Row } from './helpers/reports.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const { base, rows, createOk } = reportCrudHelpers(() => t);

describe('POST /reports/<report_id>/chat-profiles', () => {
  const deliver = (id: string, payload: object, headers: Record<string, string> = key) =>
    t.app.inject({ method: 'POST', url: `/reports/${id}/chat-profiles`, headers, payload });
  const profile = (id: string) => rows('select chat_id, username, global_name, avatar, profile from chat_profiles where chat_id = $1::text', id);

  it('upserts the profiles by chat id, known fields in columns and the whole object in profile', async () => {
    const payload = base();
    const id = await createOk(payload);
    const reporter = { chat_id: payload.reporter, username: 'rep', global_name: 'Rep Orter', avatar: 'a1', banner: 'b' };
    const res = await deliver(id, { reporter, reportee: { chat_id: payload.reported, username: 'bad' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().stored).toEqual([
      expect.objectContaining({ chat_id: payload.reporter, username: 'rep', profile: reporter }),
      expect.objectContaining({ chat_id: payload.reported, username: 'bad', global_name: null }),
    ]);
    expect(await profile(payload.reporter)).toEqual([{ chat_id: payload.reporter, username: 'rep', global_name: 'Rep Orter', avatar: 'a1', profile: reporter }]);
    // A later delivery replaces the snapshot; `reported` is the same party as `reportee`.
    const again = await deliver(id, { reported: { chat_id: payload.reported, username: 'renamed' }, reportee: { chat_id: payload.reported, username: 'renamed' } });
    expect(again.json().stored).toEqual([expect.objectContaining({ chat_id: payload.reported, username: 'renamed' })]);
    expect(await profile(payload.reported)).toEqual([expect.objectContaining({ username: 'renamed' })]);
    const full = (await t.app.inject({ url: `/reports/${id}`, headers: key })).json().report;
    expect(full.chat_profiles.map((p: Row) => p.chat_id).sort()).toEqual([payload.reporter, payload.reported].sort());
  });

  it('key only; 404 unknown report; 400 bad profiles', async () => {
    const id = await createOk();
    const director = await signedIn(t, { rank: 'Director', clearance: 5 });
    expect((await deliver(id, { reporter: { chat_id: '1' } }, director.headers)).statusCode).toBe(401);
    const missing = await deliver('NOPE-5', { reporter: { chat_id: '1' } });
    expect(missing.json()).toEqual({ success: false, error: 'Report NOPE-5 not found', code: 'NOT_FOUND' });
    for (const [payload, error] of [
      [{}, 'body needs reporter, reportee or reported'],
      [{ reporter: { chat_id: 'abc' } }, 'body.reporter.chat_id must match pattern "^[0-9]{1,20}$"'],
      [{ reporter: { username: 'x' } }, 'body.reporter.chat_id is required'],
      [{ reportee: { chat_id: '1' }, reported: { chat_id: '2' } }, 'body.reportee and body.reported are the same party and must name the same chat_id'],
      [{ witness: { chat_id: '1' } }, 'body.witness is not an accepted field'],
    ] as const) {
      const res = await deliver(id, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error).toBe(error);
    }
    expect(await profile('1')).toEqual([]);
  });
});
