// Reading and changing punishments (spec: Punishments and discipline; States and transitions,
// Punishment): GET list and one, PATCH, revoke and the stored profile, with the rows written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { failure, key, openPunishmentsApp, punishmentTools, type PunishmentsApp, type Row } from './helpers/punishments.js';

let app: PunishmentsApp;
let t: TestApp;
let manager: Person;
let supervisor: Person;
let viewer: Person;
let clearance3: Person;
beforeAll(async () => {
  app = await openPunishmentsApp();
  ({ t, manager, supervisor, viewer, clearance3 } = app);
});
afterAll(() => t.close());
const { q, inject, get, patch, revoke, issued, rowsOf, totals, report } = punishmentTools(() => app);

describe('GET /punishments and GET /punishments/<id>', () => {
  it('filters by user and status, newest first, with the total; limit and offset page', async () => {
    const user = chatId();
    const a = await issued({ user_id: user, reason: 'first' });
    const b = await issued({ user_id: user, reason: 'second' });
    const c = await issued({ user_id: user, reason: 'third', status: 'Appealed' });
    await issued();
    const all = await get(`/punishments?user_id=${user}`);
    expect(all.statusCode).toBe(200);
    expect(all.json()).toEqual({ success: true, count: 3, punishments: [c, b, a] });
    expect((await get(`/punishments?user_id=${user}&status=Appealed`)).json()).toEqual({ success: true, count: 1, punishments: [c] });
    expect((await get(`/punishments?user_id=${user}&status=Revoked`)).json()).toEqual({ success: true, count: 0, punishments: [] });
    expect((await get(`/punishments?user_id=${user}&limit=2`)).json()).toEqual({ success: true, count: 3, punishments: [c, b] });
    expect((await get(`/punishments?user_id=${user}&limit=2&offset=2`)).json()).toEqual({ success: true, count: 3, punishments: [a] });
    const everyone = (await get('/punishments')).json();
    expect(everyone.count).toBe((await totals()).punishments);
    expect(everyone.punishments[0]).toEqual((await get('/punishments?limit=1')).json().punishments[0]);
  });

  it('default limit 200, at most 500', async () => {
    const user = chatId();
    // 205 rows straight into the store, with distinct ids of the AA0AA0 shape.
    await q(
      `insert into punishments (punishment_id, user_id, reason, created_at)
       select 'QQ' || (g % 10) || chr(65 + (g / 10) % 26) || chr(65 + (g / 260) % 26) || '0', $1, 'bulk', now() - g * interval '1 second'
       from generate_series(0, 204) g`,
      [user],
    );
    const page = (await get(`/punishments?user_id=${user}`)).json();
    expect(page.count).toBe(205);
    expect(page.punishments).toHaveLength(200);
    expect((await get(`/punishments?user_id=${user}&limit=500`)).json().punishments).toHaveLength(205);
  });

  it.each([
    ['limit=0', 'querystring.limit must be >= 1'],
    ['limit=501', 'querystring.limit must be <= 500'],
    ['limit=ten', 'querystring.limit must be integer'],
    ['offset=-1', 'querystring.offset must be >= 0'],
    ['status=Banned', 'querystring.status must be one of: Active, Appealed, Expired, Revoked'],
    ['user_id=abc', 'querystring.user_id must match pattern "^[0-9]{1,20}$"'],
  ])('400 for %s', async (query, error) => {
    const res = await get(`/punishments?${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(failure(error, 'VALIDATION_ERROR'));
  });

  it('one punishment; 404 unknown; view_punishments needed; the key is refused', async () => {
    const p = await issued();
    const one = await get(`/punishments/${p.punishment_id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual({ success: true, punishment: p });
    const missing = await get('/punishments/AA0AA0');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual(failure('Punishment AA0AA0 not found', 'PUNISHMENT_NOT_FOUND'));
    const clearance1 = await signedIn(t, { clearance: 1 });
    for (const url of ['/punishments', `/punishments/${p.punishment_id}`]) {
      expect((await get(url, clearance1)).json()).toEqual(failure('Insufficient clearance', 'INSUFFICIENT_CLEARANCE'));
      const keyed = await inject('GET', url, key);
      expect(keyed.statusCode).toBe(403);
      expect(keyed.json().code).toBe('SESSION_REQUIRED');
    }
  });
});

describe('GET /punishments/users/<chat_id>/profile', () => {
  it('the stored profile; 404 when none; 400 for a bad chat id; the key is refused', async () => {
    const user = chatId();
    const [stored] = await q(`insert into chat_profiles (chat_id, username, global_name, avatar) values ($1, 'u1', 'User One', null) returning chat_id, username, global_name, avatar, updated_at`, [user]);
    const res = await get(`/punishments/users/${user}/profile`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, profile: stored });
    const other = chatId();
    const missing = await get(`/punishments/users/${other}/profile`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual(failure(`No stored profile for user ${other}`, 'PROFILE_NOT_FOUND'));
    expect((await get('/punishments/users/abc/profile')).statusCode).toBe(400);
    expect((await inject('GET', `/punishments/users/${user}/profile`, key)).statusCode).toBe(403);
  });
});

describe('PATCH /punishments/<id>', () => {
  const stamp = async (id: string) => (await q('select updated_at from punishments where punishment_id = $1', [id]))[0]!.updated_at;
  /** A punishment issued an hour ago, so that updated_at shows whether anything was written. */
  async function aged(body: Row = {}): Promise<Row> {
    const p = await issued({ username: 'old', notes: 'old notes', ...body });
    await q(`update punishments set created_at = now() - interval '1 hour', updated_at = now() - interval '1 hour' where punishment_id = $1`, [p.punishment_id]);
    return (await get(`/punishments/${p.punishment_id}`)).json().punishment;
  }
  const unchanged = async (p: Row) => {
    const { audit, events, deliveries } = await rowsOf(p.punishment_id);
    expect(audit.map((a) => a.action)).toEqual(['punishment.issued']);
    expect(events.map((e) => e.type)).toEqual(['punishment.issued']);
    expect(deliveries.map((d) => d.kind)).toEqual(['issue']);
    expect(await stamp(p.punishment_id)).toBe(p.updated_at);
  };

  it('changes the given fields: audit and event carry only what changed, before and after', async () => {
    const p = await aged();
    const reportId = await report();
    const res = await patch(p.punishment_id, { reason: 'Appeal lodged', username: 'old', notes: 'new notes', status: 'Appealed', report_id: reportId });
    expect(res.statusCode).toBe(200);
    const updated = res.json().punishment;
    expect(updated).toEqual({ ...p, notes: 'new notes', status: 'Appealed', report_id: reportId, updated_at: expect.any(String) });
    expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(p.updated_at));
    const { punishment: row, audit, events, deliveries } = await rowsOf(p.punishment_id);
    expect(row!.updated_at).toBe(updated.updated_at);
    const before = { notes: 'old notes', status: 'Active', report_id: null };
    const after = { notes: 'new notes', status: 'Appealed', report_id: reportId };
    const correlation_id = res.headers['x-request-id'];
    expect(audit[1]).toEqual({ actor_kind: 'agent', actor_chat_id: manager.agent.chat_id, action: 'punishment.updated', target: p.punishment_id, reason: 'Appeal lodged', before, after, correlation_id });
    expect(events[1]).toEqual({
      type: 'punishment.updated', actor_kind: 'agent', actor_chat_id: manager.agent.chat_id, report_id: reportId, before, after,
      data: { punishment_id: p.punishment_id, reason: 'Appeal lodged' }, is_supervisor: false, correlation_id,
    });
    expect(audit).toHaveLength(2);
    expect(events).toHaveLength(2);
    expect(deliveries.map((d) => d.kind)).toEqual(['issue']);
    const cleared = await patch(p.punishment_id, { reason: 'Tidy', notes: null, status: 'Active' });
    expect(cleared.json().punishment).toMatchObject({ notes: null, status: 'Active' });
    expect((await rowsOf(p.punishment_id)).audit[2]).toMatchObject({ before: { notes: 'new notes', status: 'Appealed' }, after: { notes: null, status: 'Active' } });
  });

  it('a duration such as 3d counts from the issue; an explicit expires_at wins', async () => {
    const p = await aged();
    const res = await patch(p.punishment_id, { reason: 'Shorter', duration: '3d' });
    expect(res.statusCode).toBe(200);
    const expected = new Date(Date.parse(p.created_at) + 3 * 86_400_000).toISOString();
    expect(res.json().punishment).toMatchObject({ duration: '3d', expires_at: expected });
    expect((await rowsOf(p.punishment_id)).events[1]).toMatchObject({ before: { duration: null, expires_at: null }, after: { duration: '3d', expires_at: expected } });
    const given = new Date(Date.now() + 600_000).toISOString();
    expect((await patch(p.punishment_id, { reason: 'Set', duration: '1w', expires_at: given })).json().punishment).toMatchObject({ duration: '1w', expires_at: given });
  });

  it('values equal to the current ones change nothing: 200 and nothing written', async () => {
    const expires = new Date(Date.now() + 86_400_000);
    expires.setUTCMilliseconds(0);
    const p = await aged({ expires_at: expires.toISOString() });
    // The same instant in another offset is the same value.
    const plusTwo = new Date(expires.getTime() + 7_200_000).toISOString().replace('.000Z', '+02:00');
    const res = await patch(p.punishment_id, { reason: 'Nothing new', username: 'old', notes: 'old notes', status: 'Active', expires_at: plusTwo, report_id: null });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, punishment: p });
    await unchanged(p);
  });

  it('409 for status Revoked (USE_REVOKE) and Expired (EXPIRY_IS_AUTOMATIC); nothing written', async () => {
    const p = await aged();
    const revoked = await patch(p.punishment_id, { reason: 'x', status: 'Revoked', notes: 'changed' });
    expect(revoked.statusCode).toBe(409);
    expect(revoked.json()).toEqual(failure(`Use POST /punishments/${p.punishment_id}/revoke to revoke a punishment`, 'USE_REVOKE'));
    const expired = await patch(p.punishment_id, { reason: 'x', status: 'Expired' });
    expect(expired.statusCode).toBe(409);
    expect(expired.json()).toEqual(failure('Expired is set by the service once expires_at has passed', 'EXPIRY_IS_AUTOMATIC'));
    await unchanged(p);
  });

  it('409 PUNISHMENT_CLOSED once revoked; 404 unknown; 400 without a reason or with a bad field', async () => {
    const p = await aged();
    expect((await revoke(p.punishment_id, { reason: 'Done' })).statusCode).toBe(200);
    const before = await totals();
    const closed = await patch(p.punishment_id, { reason: 'x', notes: 'late' });
    expect(closed.statusCode).toBe(409);
    expect(closed.json()).toEqual(failure(`Punishment ${p.punishment_id} is Revoked and can no longer be changed`, 'PUNISHMENT_CLOSED'));
    const missing = await patch('AB1CD2', { reason: 'x', notes: 'y' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual(failure('Punishment AB1CD2 not found', 'PUNISHMENT_NOT_FOUND'));
    const open = await aged();
    const cases: [Row, string][] = [
      [{ notes: 'y' }, 'body.reason is required'],
      [{ reason: '' }, 'body.reason must NOT have fewer than 1 characters'],
      [{ reason: 'x', revoked_by: '1' }, 'body.revoked_by is server-managed and cannot be set'],
      [{ reason: 'x', user_id: '1' }, 'body.user_id is not an accepted field'],
      [{ reason: 'x', expires_at: new Date(Date.now() - 1000).toISOString() }, 'body.expires_at must be in the future'],
      [{ reason: 'x', duration: '0m' }, 'body.duration must be a length of time above zero (30m, 12h, 7d, 2w) or a label'],
      [{ reason: 'x', duration: ' -1H ' }, 'body.duration must be a length of time above zero (30m, 12h, 7d, 2w) or a label'],
      [{ reason: 'x', report_id: 'SVC-CASE-99999' }, 'body.report_id: report SVC-CASE-99999 does not exist'],
    ];
    for (const [body, error] of cases) {
      const res = await patch(open.punishment_id, body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(failure(error, 'VALIDATION_ERROR'));
    }
    await unchanged(open);
    expect(await totals()).toEqual({ ...before, punishments: before.punishments + 1, audit: before.audit + 1, events: before.events + 1, deliveries: before.deliveries + 2, last_update: expect.anything() });
  });

  it('a supervisor-flagged report needs supervisor rank; the key and low clearance are refused', async () => {
    const p = await aged();
    const flagged = await report(true);
    const refused = await patch(p.punishment_id, { reason: 'x', report_id: flagged });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('SUPERVISOR_ONLY');
    expect((await inject('PATCH', `/punishments/${p.punishment_id}`, key, { reason: 'x', notes: 'k' })).json().code).toBe('SESSION_REQUIRED');
    expect((await patch(p.punishment_id, { reason: 'x', notes: 'v' }, clearance3)).json().code).toBe('INSUFFICIENT_CLEARANCE');
    await unchanged(p);
    const res = await patch(p.punishment_id, { reason: 'Linked', report_id: flagged }, supervisor);
    expect(res.statusCode).toBe(200);
    expect((await rowsOf(p.punishment_id)).events[1]).toMatchObject({ type: 'punishment.updated', report_id: flagged, is_supervisor: true });
  });
});

describe('POST /punishments/<id>/revoke', () => {
  it('revokes: status, revoke fields, audit, event and the revoke delivery', async () => {
    const p = await issued({ status: 'Appealed' });
    const res = await revoke(p.punishment_id, { reason: 'Appeal upheld' });
    expect(res.statusCode).toBe(200);
    const revoked = res.json().punishment;
    expect(revoked).toMatchObject({ status: 'Revoked', revoked_by: manager.agent.chat_id, revoke_reason: 'Appeal upheld', delivery: { kind: 'revoke', status: 'pending', attempts: 0 } });
    expect(Date.now() - Date.parse(revoked.revoked_at)).toBeLessThan(60_000);
    const { punishment: row, audit, events, deliveries } = await rowsOf(p.punishment_id);
    expect(row).toMatchObject({ status: 'Revoked', revoked_at: revoked.revoked_at, revoked_by: manager.agent.chat_id, revoke_reason: 'Appeal upheld' });
    const before = { status: 'Appealed' };
    const after = { status: 'Revoked', revoked_at: revoked.revoked_at, revoked_by: manager.agent.chat_id };
    const correlation_id = res.headers['x-request-id'];
    expect(audit[1]).toEqual({ actor_kind: 'agent', actor_chat_id: manager.agent.chat_id, action: 'punishment.revoked', target: p.punishment_id, reason: 'Appeal upheld', before, after, correlation_id });
    const [item] = await q(`select item_id from discipline_deliveries where punishment_id = $1 and kind = 'revoke'`, [p.punishment_id]);
    expect(events[1]).toEqual({
      type: 'punishment.revoked', actor_kind: 'agent', actor_chat_id: manager.agent.chat_id, report_id: null, before, after,
      data: { punishment_id: p.punishment_id, user_id: p.user_id, reason: 'Appeal upheld', delivery_item_id: item!.item_id }, is_supervisor: false, correlation_id,
    });
    expect(deliveries).toEqual([
      { kind: 'issue', user_id: p.user_id, status: 'pending', requested_by: manager.agent.chat_id },
      { kind: 'revoke', user_id: p.user_id, status: 'pending', requested_by: manager.agent.chat_id },
    ]);

    const before2 = await totals();
    const again = await revoke(p.punishment_id, { reason: 'Twice' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual(failure(`Punishment ${p.punishment_id} is already revoked`, 'ALREADY_REVOKED'));
    expect(await totals()).toEqual(before2);
  });

  it('409 ALREADY_EXPIRED, 404 unknown, 400 without a reason, 403 for the key: nothing written', async () => {
    const p = await issued();
    await q(`update punishments set status = 'Expired', expired_at = now() where punishment_id = $1`, [p.punishment_id]);
    const before = await totals();
    const expired = await revoke(p.punishment_id, { reason: 'Late' });
    expect(expired.statusCode).toBe(409);
    expect(expired.json()).toEqual(failure(`Punishment ${p.punishment_id} has already expired`, 'ALREADY_EXPIRED'));
    const missing = await revoke('AB1CD2', { reason: 'x' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual(failure('Punishment AB1CD2 not found', 'PUNISHMENT_NOT_FOUND'));
    const open = await issued();
    const mid = await totals();
    expect((await revoke(open.punishment_id, undefined)).json()).toEqual(failure('body.reason is required', 'VALIDATION_ERROR'));
    expect((await revoke(open.punishment_id, { reason: '' })).json()).toEqual(failure('body.reason must NOT have fewer than 1 characters', 'VALIDATION_ERROR'));
    expect((await revoke(open.punishment_id, { reason: 'x'.repeat(501) })).statusCode).toBe(400);
    expect((await inject('POST', `/punishments/${open.punishment_id}/revoke`, key, { reason: 'x' })).json().code).toBe('SESSION_REQUIRED');
    expect((await revoke(open.punishment_id, { reason: 'x' }, viewer)).json().code).toBe('INSUFFICIENT_CLEARANCE');
    expect(await totals()).toEqual(mid);
    expect(mid.punishments).toBe(before.punishments + 1);
    expect((await rowsOf(open.punishment_id)).punishment).toMatchObject({ status: 'Active', revoked_at: null });
  });
});
