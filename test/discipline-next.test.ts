// GET /discipline/next, the bot's pickup (spec: Punishments and discipline; States and transitions,
// Discipline delivery item): order, pacing, the embedded punishment, expiry and stale sweeps first,
// and concurrent pickups. The queue is global, so these tests empty it first (tests of a file run in order).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STALE_FAILED_NOTE, STALE_REQUEUED_NOTE } from '../src/queue/sweep.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { emptyQueue, itemEvents, itemRow, makeItem, makePunishment, makeReport, next, secondsFromNow } from './helpers/discipline.js';
import { signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('GET /discipline/next', () => {
  it('204 with an empty body when nothing is due', async () => {
    await emptyQueue(t);
    await makeItem(t, { status: 'processing', attempts: 1, claimedAgo: 5 });
    await makeItem(t, { status: 'failed', attempts: 3 });
    const res = await next(t);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
  });

  it('claims the oldest due item first: processing, attempts 1, claimed now', async () => {
    await emptyQueue(t);
    const newer = await makeItem(t, { availableIn: -10 });
    const older = await makeItem(t, { availableIn: -60 });
    const res = await next(t);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, item: { item_id: older.item_id, kind: 'issue', status: 'processing', attempts: 1, surface: 'chat', user_id: older.user_id } });
    expect(secondsFromNow(body.item.claimed_at)).toBeGreaterThan(-10);
    const row = await itemRow(t, older.item_id);
    expect(row).toMatchObject({ status: 'processing', attempts: 1 });
    expect(row.claimed_at).toBe(body.item.claimed_at);
    expect((await itemRow(t, newer.item_id)).status).toBe('pending');

    const second = await next(t);
    expect(second.json().item).toMatchObject({ item_id: newer.item_id, status: 'processing', attempts: 1 });
    expect((await next(t)).statusCode).toBe(204);
  });

  it('embeds the live punishment row, read at pickup; null for a user_lookup', async () => {
    await emptyQueue(t);
    const report = await makeReport(t);
    const punishment = await makePunishment(t, { reportId: report });
    const item = await makeItem(t, { punishment, availableIn: -5 });
    await t.db.production.query(`update punishments set reason = 'Changed after enqueue', status = 'Appealed' where punishment_id = $1::text`, [punishment.punishment_id]);
    const lookup = await makeItem(t, { kind: 'user_lookup' });

    const res = await next(t);
    expect(res.statusCode).toBe(200);
    const claimed = res.json().item;
    expect(claimed.item_id).toBe(item.item_id);
    expect(claimed.punishment).toMatchObject({
      punishment_id: punishment.punishment_id,
      user_id: punishment.user_id,
      reason: 'Changed after enqueue',
      status: 'Appealed',
      report_id: report,
      expires_at: null,
      created_at: punishment.created_at,
    });

    const res2 = await next(t);
    expect(res2.json().item).toMatchObject({ item_id: lookup.item_id, kind: 'user_lookup', punishment_id: null, punishment: null });
  });

  it('does not hand out a paced item before its available_at', async () => {
    await emptyQueue(t);
    const paced = await makeItem(t, { availableIn: 3600, attempts: 1 });
    expect((await next(t)).statusCode).toBe(204);
    expect(await itemRow(t, paced.item_id)).toMatchObject({ status: 'pending', attempts: 1, claimed_at: null });
    await t.db.production.query(`update discipline_deliveries set available_at = now() - interval '1 second' where item_id = $1::bigint`, [paced.item_id]);
    const res = await next(t);
    expect(res.json().item).toMatchObject({ item_id: paced.item_id, status: 'processing', attempts: 2 });
  });

  it('expires lapsed punishments first and hands out their expire delivery', async () => {
    await emptyQueue(t);
    const report = await makeReport(t);
    const lapsed = await makePunishment(t, { reportId: report, expiresIn: -30 });
    const res = await next(t);
    expect(res.statusCode).toBe(200);
    const item = res.json().item;
    expect(item).toMatchObject({ kind: 'expire', punishment_id: lapsed.punishment_id, user_id: lapsed.user_id, status: 'processing', attempts: 1 });
    expect(item.punishment).toMatchObject({ punishment_id: lapsed.punishment_id, status: 'Expired' });
    expect(item.punishment.expired_at).not.toBeNull();
    const row = (await t.db.production.query('select status from punishments where punishment_id = $1::text', [lapsed.punishment_id])).rows[0];
    expect(row).toEqual({ status: 'Expired' });
    const expired = await t.db.production.query(`select type, actor_kind, report_id, correlation_id from events where type = 'punishment.expired' and report_id = $1::text`, [report]);
    expect(expired.rows).toEqual([{ type: 'punishment.expired', actor_kind: 'system', report_id: report, correlation_id: res.headers['x-request-id'] }]);
  });

  it('is for the API key only', async () => {
    const agent = await signedIn(t, { clearance: 5, rank: 'Director' });
    const res = await next(t, agent.headers);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ success: false, code: 'KEY_REQUIRED' });
  });
});

describe('GET /discipline/next: the stale sweep runs first', () => {
  let s: TestApp;
  beforeAll(async () => {
    s = await createTestApp({ env: { QUEUE_STALE_TIMEOUT_SECONDS: '60' } });
  });
  afterAll(() => s.close());

  it('requeues a stale claim under the cap and fails one at the cap, with system events', async () => {
    const report = await makeReport(s);
    const stale = await makeItem(s, { status: 'processing', attempts: 1, claimedAgo: 120, availableIn: -300 });
    const capped = await makeItem(s, { punishment: await makePunishment(s, { reportId: report }), status: 'processing', attempts: 3, claimedAgo: 120, availableIn: -200 });
    const fresh = await makeItem(s, { status: 'processing', attempts: 1, claimedAgo: 10, availableIn: -100 });

    const res = await next(s);
    expect(res.statusCode).toBe(200);
    const correlation = res.headers['x-request-id'];
    // Requeued by the sweep, then claimed again by this very pickup.
    expect(res.json().item).toMatchObject({ item_id: stale.item_id, status: 'processing', attempts: 2, last_error: STALE_REQUEUED_NOTE });
    expect(await itemEvents(s, stale.item_id)).toEqual([
      {
        type: 'delivery.requeued',
        actor_kind: 'system',
        actor_chat_id: null,
        report_id: null,
        before: { status: 'processing' },
        after: { status: 'pending', attempts: 1 },
        data: { item_id: stale.item_id, kind: 'issue', swept: true, last_error: STALE_REQUEUED_NOTE },
        correlation_id: correlation,
      },
    ]);

    expect(await itemRow(s, capped.item_id)).toMatchObject({ status: 'failed', attempts: 3, last_error: STALE_FAILED_NOTE, claimed_at: null });
    expect((await itemRow(s, capped.item_id)).completed_at).not.toBeNull();
    expect(await itemEvents(s, capped.item_id)).toEqual([
      expect.objectContaining({ type: 'delivery.failed', actor_kind: 'system', report_id: report, before: { status: 'processing' }, after: { status: 'failed', attempts: 3 }, correlation_id: correlation }),
    ]);

    expect(await itemRow(s, fresh.item_id)).toMatchObject({ status: 'processing', attempts: 1 });
    expect(await itemEvents(s, fresh.item_id)).toEqual([]);
    expect((await next(s)).statusCode).toBe(204);
  });
});

describe.runIf(onPostgres)('concurrent pickups (PostgreSQL only)', () => {
  it('20 pickups of 10 due items: 10 distinct items and 10 empty answers', async () => {
    await emptyQueue(t);
    const seeded = [];
    for (let i = 0; i < 10; i++) seeded.push(await makeItem(t, { availableIn: -100 + i }));
    const answers = await Promise.all(Array.from({ length: 20 }, () => next(t)));
    const claimed = answers.filter((r) => r.statusCode === 200).map((r) => r.json().item.item_id as number);
    expect(answers.filter((r) => r.statusCode === 204)).toHaveLength(10);
    expect(new Set(claimed).size).toBe(10);
    expect([...claimed].sort((a, b) => a - b)).toEqual(seeded.map((s) => s.item_id).sort((a, b) => a - b));
    const rows = await t.db.production.query(`select status, attempts, count(*)::int as n from discipline_deliveries group by status, attempts`);
    expect(rows.rows).toEqual([{ status: 'processing', attempts: 1, n: 10 }]);
  });
});
