// Punishment expiry (docs/decisions.md: Expired is set by the sweep once expires_at passes): every
// punishment route sweeps first, each punishment expires exactly once with one event and one
// expire delivery, however many instances sweep at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/platform/db/types.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { expireDuePunishments } from '../src/punishments/queries.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

type Row = Record<string, any>;
let t: TestApp;
let manager: Person;
beforeAll(async () => {
  t = await createTestApp();
  manager = await signedIn(t, { rank: 'Agent', clearance: 4 });
});
afterAll(() => t.close());

const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query(sql, values)).rows as Row[];
const request = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: manager.headers, ...(payload === undefined ? {} : { payload }) });

async function issued(body: Row = {}): Promise<Row> {
  const res = await request('POST', '/punishments', { user_id: chatId(), reason: 'Spamming', expires_at: new Date(Date.now() + 3_600_000).toISOString(), ...body });
  expect(res.statusCode).toBe(201);
  return res.json().punishment;
}

/** Moves the expiry into the past behind the service's back, as the passing of time would. */
const backdate = (id: string) => q(`update punishments set expires_at = now() - interval '1 minute' where punishment_id = $1`, [id]);

const expiryRows = async (id: string) => ({
  events: await q(`select type, actor_kind, actor_chat_id, report_id, before, after, data from events where type = 'punishment.expired' and data->>'punishment_id' = $1`, [id]),
  deliveries: await q(`select item_id, kind, user_id, status from discipline_deliveries where kind = 'expire' and punishment_id = $1`, [id]),
});
const totals = async () =>
  (await q(`select (select count(*) from events)::int as events, (select count(*) from discipline_deliveries)::int as deliveries,
      (select max(updated_at) from punishments) as last_update`))[0]!;

describe('expiry on read', () => {
  it('a punishment past its expires_at is Expired on the next read, with one event and one expire delivery, once', async () => {
    const reportId = 'SVC-CASE-00001';
    await q(`insert into reports (report_id, reporter, reported, reason, notes, evidence) values ($1, 'a', 'b', 'Spam', '', '')`, [reportId]);
    const p = await issued({ status: 'Appealed', report_id: reportId });
    const future = await issued();
    const open = await issued({ expires_at: null });
    await backdate(p.punishment_id);
    const res = await request('GET', `/punishments/${p.punishment_id}`);
    expect(res.statusCode).toBe(200);
    const expired = res.json().punishment;
    expect(expired).toMatchObject({ status: 'Expired', delivery: { kind: 'expire', status: 'pending', attempts: 0 } });
    expect(Date.now() - Date.parse(expired.expired_at)).toBeLessThan(60_000);
    const [row] = await q('select status, expired_at, expires_at from punishments where punishment_id = $1', [p.punishment_id]);
    expect(row).toEqual({ status: 'Expired', expired_at: expired.expired_at, expires_at: expired.expires_at });
    const { events, deliveries } = await expiryRows(p.punishment_id);
    expect(deliveries).toEqual([{ item_id: expect.any(Number), kind: 'expire', user_id: p.user_id, status: 'pending' }]);
    expect(events).toEqual([{
      type: 'punishment.expired', actor_kind: 'system', actor_chat_id: null, report_id: reportId,
      before: { status: 'Appealed' }, after: { status: 'Expired', expired_at: expired.expired_at },
      data: { punishment_id: p.punishment_id, user_id: p.user_id, expires_at: expired.expires_at, delivery_item_id: deliveries[0]!.item_id },
    }]);
    // Those not yet due, and those without an expiry, stay in force.
    expect(await q('select punishment_id, status from punishments where punishment_id = any($1) order by punishment_id', [[future.punishment_id, open.punishment_id]])).toEqual(
      [future, open].map((x) => ({ punishment_id: x.punishment_id, status: 'Active' })).sort((a, b) => a.punishment_id.localeCompare(b.punishment_id)),
    );

    const before = await totals();
    expect((await request('GET', `/punishments/${p.punishment_id}`)).json().punishment).toEqual(expired);
    expect((await request('GET', `/punishments?user_id=${p.user_id}`)).json()).toEqual({ success: true, count: 1, punishments: [expired] });
    const again = await request('POST', `/punishments/${p.punishment_id}/revoke`, { reason: 'Too late' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ success: false, error: `Punishment ${p.punishment_id} has already expired`, code: 'ALREADY_EXPIRED' });
    const changed = await request('PATCH', `/punishments/${p.punishment_id}`, { reason: 'x', notes: 'late' });
    expect(changed.statusCode).toBe(409);
    expect(changed.json().code).toBe('PUNISHMENT_CLOSED');
    expect(await totals()).toEqual(before);
    expect(await expiryRows(p.punishment_id)).toEqual({ events, deliveries });
  });

  it('every punishment route sweeps first, the list and the profile lookup included', async () => {
    for (const url of ['/punishments?limit=1', `/punishments/users/${chatId()}/profile`]) {
      const p = await issued();
      await backdate(p.punishment_id);
      await request('GET', url);
      expect((await q('select status from punishments where punishment_id = $1', [p.punishment_id]))[0]!.status).toBe('Expired');
      expect((await expiryRows(p.punishment_id)).events).toHaveLength(1);
    }
    // Creating is a punishment route too: the due one is expired before the new one is issued.
    const due = await issued();
    await backdate(due.punishment_id);
    await issued();
    expect((await expiryRows(due.punishment_id)).deliveries).toHaveLength(1);
  });

  it('a PATCH that moves expires_at into the past expires the punishment at once', async () => {
    const p = await issued({ expires_at: null });
    await q(`update punishments set created_at = now() - interval '2 days' where punishment_id = $1`, [p.punishment_id]);
    const res = await request('PATCH', `/punishments/${p.punishment_id}`, { reason: 'One day only', duration: '1d' });
    expect(res.statusCode).toBe(200);
    expect(res.json().punishment).toMatchObject({ status: 'Expired', duration: '1d', delivery: { kind: 'expire' } });
    const events = await q(`select type, correlation_id from events where data->>'punishment_id' = $1 order by id`, [p.punishment_id]);
    expect(events.map((e) => e.type)).toEqual(['punishment.issued', 'punishment.updated', 'punishment.expired']);
    expect(events[2]!.correlation_id).toBe(res.headers['x-request-id']);
  });
});

describe.runIf(onPostgres)('concurrent expiry (PostgreSQL)', () => {
  it('8 instances and 8 requests racing on 200 due punishments: each expires once, one event and one delivery', async () => {
    const user = chatId();
    await q(
      `insert into punishments (punishment_id, user_id, reason, expires_at)
       select 'RR' || (g % 10) || chr(65 + (g / 10) % 26) || chr(65 + (g / 260) % 26) || '1', $1, 'due', now() - interval '1 second'
       from generate_series(0, 199) g`,
      [user],
    );
    const instances: Db[] = Array.from({ length: 8 }, () => openPostgres({ connectionString: t.urls.production!, max: 2 }));
    try {
      const [swept, responses] = await Promise.all([
        Promise.all(instances.map((db, i) => expireDuePunishments(db, `instance-${i}`))),
        Promise.all(Array.from({ length: 8 }, () => request('GET', `/punishments?user_id=${user}&limit=500`))),
      ]);
      for (const res of responses) {
        expect(res.statusCode).toBe(200);
        expect(res.json().punishments.map((p: Row) => p.status)).toEqual(Array(200).fill('Expired'));
      }
      const ids = swept.flat();
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      await Promise.all(instances.map((db) => db.close()));
    }
    expect(await q(`select status, count(*)::int as n from punishments where user_id = $1 group by status`, [user])).toEqual([{ status: 'Expired', n: 200 }]);
    const perPunishment = await q(
      `select p.punishment_id,
         (select count(*) from events e where e.type = 'punishment.expired' and e.data->>'punishment_id' = p.punishment_id)::int as events,
         (select count(*) from discipline_deliveries d where d.kind = 'expire' and d.punishment_id = p.punishment_id)::int as deliveries
       from punishments p where p.user_id = $1`,
      [user],
    );
    expect(perPunishment).toHaveLength(200);
    expect(perPunishment.filter((r) => r.events !== 1 || r.deliveries !== 1)).toEqual([]);
  });
});
