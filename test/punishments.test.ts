// Issuing punishments, POST /punishments (spec: Punishments and discipline; Authentication 2-3):
// creation, validation, id generation and atomicity, with the rows written or left alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatId, type Person } from './helpers/identity.js';
import { COLLIDING_USER, failure, ID, key, openPunishmentsApp, punishmentTools, REFUSED_USER, type PunishmentsApp, type Row } from './helpers/punishments.js';

let app: PunishmentsApp;
let manager: Person;
let supervisor: Person;
let clearance3: Person;
beforeAll(async () => {
  app = await openPunishmentsApp();
  ({ manager, supervisor, clearance3 } = app);
});
afterAll(() => app.t.close());
const { q, inject, issue, issued, rowsOf, totals, report } = punishmentTools(() => app);

describe('POST /punishments', () => {
  it('201: the row, audit, event, issue delivery and a user_lookup when no profile is stored', async () => {
    const user = chatId();
    const res = await issue({ user_id: user, reason: 'Spamming', username: 'spammer' });
    expect(res.statusCode).toBe(201);
    const { success, punishment } = res.json();
    expect(success).toBe(true);
    expect(punishment.punishment_id).toMatch(ID);
    expect(punishment).toMatchObject({
      user_id: user, username: 'spammer', reason: 'Spamming', status: 'Active', expires_at: null, duration: null, report_id: null,
      issued_by: manager.agent.chat_id, issued_by_name: 'Mona Manager', revoked_at: null, revoked_by: null, expired_at: null, profile: null,
      delivery: { kind: 'issue', status: 'pending', attempts: 0, result_note: null, last_error: null, ref: null, completed_at: null },
    });
    const id = punishment.punishment_id;
    const { punishment: row, audit, events, deliveries } = await rowsOf(id);
    const { delivery: _d, profile: _p, ...columns } = punishment;
    expect(row).toEqual(columns);
    const correlation_id = res.headers['x-request-id'];
    expect(audit).toEqual([{ actor_kind: 'agent', actor_chat_id: manager.agent.chat_id, action: 'punishment.issued', target: id, reason: 'Spamming', before: null, after: row, correlation_id }]);
    expect(events).toEqual([{
      type: 'punishment.issued', actor_kind: 'agent', actor_chat_id: manager.agent.chat_id, report_id: null, before: null, after: row,
      data: { punishment_id: id, user_id: user }, is_supervisor: false, correlation_id,
    }]);
    expect(deliveries).toEqual([{ kind: 'issue', user_id: user, status: 'pending', requested_by: manager.agent.chat_id }]);
    expect(await q(`select status, requested_by from discipline_deliveries where kind = 'user_lookup' and user_id = $1`, [user])).toEqual([
      { status: 'pending', requested_by: manager.agent.chat_id },
    ]);
  });

  it('answers the stored profile and enqueues no lookup when one is on record; all optional fields kept', async () => {
    const user = chatId();
    const [profile] = await q(`insert into chat_profiles (chat_id, username, global_name, avatar) values ($1, 'known', 'Known One', 'abc') returning chat_id, username, global_name, avatar, updated_at`, [user]);
    const reportId = await report();
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const body = { user_id: user, reason: 'Raiding', detailed_reason: 'Long story', duration: 'custom', expires_at: expires, status: 'Appealed', evidence: 'https://e.example', notes: 'n', report_id: reportId };
    const res = await issue(body);
    expect(res.statusCode).toBe(201);
    const punishment = res.json().punishment;
    expect(punishment).toMatchObject({ ...body, profile });
    const { events, deliveries } = await rowsOf(punishment.punishment_id);
    expect(events).toEqual([expect.objectContaining({ type: 'punishment.issued', report_id: reportId, is_supervisor: false })]);
    expect(deliveries.map((d) => d.kind)).toEqual(['issue']);
    expect(await q(`select 1 from discipline_deliveries where kind = 'user_lookup' and user_id = $1`, [user])).toEqual([]);
  });

  it('a duration such as 7d sets expires_at; other durations are labels; a given expires_at wins', async () => {
    const before = Date.now();
    const sevenDays = await issued({ duration: '7d' });
    const expiry = Date.parse(sevenDays.expires_at);
    expect(expiry).toBeGreaterThanOrEqual(before + 7 * 86_400_000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 7 * 86_400_000);
    expect((await issued({ duration: 'permanent' })).expires_at).toBeNull();
    const given = new Date(Date.now() + 60_000).toISOString();
    expect((await issued({ duration: '7d', expires_at: given })).expires_at).toBe(given);
  });

  it('403 for the API key and below manage_punishments, 401 without credentials: nothing written', async () => {
    const before = await totals();
    const body = { user_id: chatId(), reason: 'x' };
    const keyed = await inject('POST', '/punishments', key, body);
    expect(keyed.statusCode).toBe(403);
    expect(keyed.json()).toMatchObject({ success: false, code: 'SESSION_REQUIRED' });
    const low = await issue(body, clearance3);
    expect(low.statusCode).toBe(403);
    expect(low.json()).toEqual(failure('Insufficient clearance', 'INSUFFICIENT_CLEARANCE'));
    expect((await inject('POST', '/punishments', { host: 'localhost' }, body)).statusCode).toBe(401);
    expect(await totals()).toEqual(before);
  });

  const past = new Date(Date.now() - 60_000).toISOString();
  const invalid: [string, Row, string][] = [
    ...['punishment_id', 'issued_by', 'issued_by_name', 'created_at', 'updated_at', 'revoked_at', 'revoked_by', 'revoke_reason', 'expired_at', 'delivery', 'profile'].map(
      (field): [string, Row, string] => [`server-managed ${field}`, { [field]: null }, `body.${field} is server-managed and cannot be set`],
    ),
    ['unknown field', { colour: 'red' }, 'body.colour is not an accepted field'],
    ['bad user_id', { user_id: '12ab' }, 'body.user_id must match pattern "^[0-9]{1,20}$"'],
    ['numeric user_id', { user_id: 123 }, 'body.user_id must be string'],
    ['empty reason', { reason: '' }, 'body.reason must NOT have fewer than 1 characters'],
    ['long username', { username: 'u'.repeat(101) }, 'body.username must NOT have more than 100 characters'],
    ['past expires_at', { expires_at: past }, 'body.expires_at must be in the future'],
    ['zero duration', { duration: '0m' }, 'body.duration must be a length of time above zero (30m, 12h, 7d, 2w) or a label'],
    ['negative duration', { duration: '-2d' }, 'body.duration must be a length of time above zero (30m, 12h, 7d, 2w) or a label'],
    ['expires_at without a time zone', { expires_at: '2099-01-01T00:00:00' }, 'body.expires_at must match format "date-time"'],
    ['status Revoked', { status: 'Revoked' }, 'body.status: Revoked is set by the service (expiry sweep or the revoke route), not by a client'],
    ['status Expired', { status: 'Expired' }, 'body.status: Expired is set by the service (expiry sweep or the revoke route), not by a client'],
    ['unknown status', { status: 'Banned' }, 'body.status must be one of: Active, Appealed, Expired, Revoked'],
    ['unknown report_id', { report_id: 'SVC-CASE-99999' }, 'body.report_id: report SVC-CASE-99999 does not exist'],
  ];
  it.each(invalid)('400 for %s, nothing written', async (_name, change, error) => {
    const before = await totals();
    const res = await issue({ user_id: chatId(), reason: 'Spamming', ...change });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(failure(error, 'VALIDATION_ERROR'));
    expect(await totals()).toEqual(before);
  });

  it('400 for a missing reason and for no body at all', async () => {
    const before = await totals();
    expect((await issue({ user_id: chatId() })).json()).toEqual(failure('body.reason is required', 'VALIDATION_ERROR'));
    const empty = await inject('POST', '/punishments', manager.headers);
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toEqual(failure('body.user_id is required', 'VALIDATION_ERROR'));
    expect(await totals()).toEqual(before);
  });

  it('a supervisor-flagged report needs supervisor rank', async () => {
    const flagged = await report(true);
    const before = await totals();
    const refused = await issue({ user_id: chatId(), reason: 'x', report_id: flagged });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual(failure('Supervisor reports require supervisor rank', 'SUPERVISOR_ONLY'));
    expect(await totals()).toEqual(before);
    const res = await issue({ user_id: chatId(), reason: 'x', report_id: flagged }, supervisor);
    expect(res.statusCode).toBe(201);
    const { events } = await rowsOf(res.json().punishment.punishment_id);
    expect(events).toEqual([expect.objectContaining({ type: 'punishment.issued', report_id: flagged, is_supervisor: true, actor_chat_id: supervisor.agent.chat_id })]);
  });

  it('an id already taken is retried under a new id; exhausted retries leave nothing behind', async () => {
    const holder = chatId();
    await q(`insert into punishments (punishment_id, user_id, reason) values ('ZZ9ZZ9', $1, 'Holds the id')`, [holder]);
    await q('update test_collisions set remaining = 3');
    const res = await issue({ user_id: COLLIDING_USER, reason: 'Collides' });
    expect(res.statusCode).toBe(201);
    const id = res.json().punishment.punishment_id;
    expect(id).toMatch(ID);
    expect(id).not.toBe('ZZ9ZZ9');
    expect(await q('select remaining from test_collisions')).toEqual([{ remaining: 0 }]);
    expect((await rowsOf(id)).events).toHaveLength(1);
    expect(await q(`select user_id from punishments where punishment_id = 'ZZ9ZZ9'`)).toEqual([{ user_id: holder }]);

    await q('update test_collisions set remaining = 8');
    const before = await totals();
    const exhausted = await issue({ user_id: COLLIDING_USER, reason: 'Collides again' });
    expect(exhausted.statusCode).toBe(500);
    expect(exhausted.json()).toEqual(failure('No free punishment id after 8 attempts', 'INTERNAL_ERROR'));
    expect(await totals()).toEqual(before);
  });

  it('concurrent creations each get a distinct id', async () => {
    const user = chatId();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => issue({ user_id: user, reason: `Burst ${i}` })));
    expect(results.map((r) => r.statusCode)).toEqual(Array(30).fill(201));
    const ids = results.map((r) => r.json().punishment.punishment_id);
    expect(new Set(ids).size).toBe(30);
    expect(await q('select count(*)::int as n, count(distinct punishment_id)::int as d from punishments where user_id = $1', [user])).toEqual([{ n: 30, d: 30 }]);
    expect(await q(`select count(*)::int as n from discipline_deliveries where user_id = $1 and kind = 'user_lookup'`, [user])).toEqual([{ n: 1 }]);
  });

  it('500 when the delivery cannot be written: no punishment, audit or event row is left', async () => {
    const before = await totals();
    const res = await issue({ user_id: REFUSED_USER, reason: 'Never lands' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ success: false, code: 'DATABASE_ERROR' });
    expect(res.json().error).toContain('refused for the test');
    expect(await totals()).toEqual(before);
    expect(await q('select 1 from punishments where user_id = $1', [REFUSED_USER])).toEqual([]);
  });
});
