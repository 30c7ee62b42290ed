// The bot's reports on discipline deliveries, POST /discipline/<id>/complete (spec: States and
// transitions, Discipline delivery item; DESIGN.md on retry_after_seconds): each branch, the rows
// and events written, and that a refused or failed request writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { completionTools, key, openCompletionApp, REFUSED_NOTE, secondsFromNow } from './helpers/discipline.js';
import { signedIn } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

let t: TestApp;
beforeAll(async () => {
  t = await openCompletionApp();
});
afterAll(() => t.close());

const { makeReport, makeItem, itemRow, itemEvents, unchanged, post } = completionTools(() => t);
const complete = (id: number, payload: unknown, headers?: Record<string, string>) => post(`/discipline/${id}/complete`, payload, headers);

describe('POST /discipline/<item_id>/complete', () => {
  it('success: terminal, note and ref kept, delivery.completed carrying the report', async () => {
    const report = await makeReport();
    const item = await makeItem({ reportId: report });
    const res = await complete(item.item_id, { result: 'success', note: 'Ban applied', ref: 'msg-42' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      success: true,
      item: { item_id: item.item_id, status: 'success', attempts: 1, result_note: 'Ban applied', ref: 'msg-42', last_error: null, punishment: { punishment_id: item.punishment_id, report_id: report } },
    });
    expect(secondsFromNow(body.item.completed_at)).toBeGreaterThan(-10);
    const row = await itemRow(item.item_id);
    expect(row).toMatchObject({ status: 'success', result_note: 'Ban applied', ref: 'msg-42', last_error: null, completed_at: body.item.completed_at });
    expect(await itemEvents(item.item_id)).toEqual([
      {
        type: 'delivery.completed',
        actor_kind: 'bot',
        actor_chat_id: null,
        report_id: report,
        before: { status: 'processing' },
        after: { status: 'success', attempts: 1, completed_at: row.completed_at },
        data: { item_id: item.item_id, kind: 'issue', punishment_id: item.punishment_id, note: 'Ban applied', ref: 'msg-42' },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
  });

  it('failed without a pause (absent, null or 0) is terminal: delivery.failed', async () => {
    for (const pause of [{}, { retry_after_seconds: null }, { retry_after_seconds: 0 }]) {
      const item = await makeItem();
      const res = await complete(item.item_id, { result: 'failed', note: 'User not in guild', ...pause });
      expect(res.statusCode).toBe(200);
      expect(res.json().item).toMatchObject({ status: 'failed', result_note: 'User not in guild', last_error: 'User not in guild', ref: null });
      const row = await itemRow(item.item_id);
      expect(row).toMatchObject({ status: 'failed', last_error: 'User not in guild', attempts: 1 });
      expect(row.completed_at).not.toBeNull();
      expect(await itemEvents(item.item_id)).toEqual([
        expect.objectContaining({
          type: 'delivery.failed',
          actor_kind: 'bot',
          report_id: null,
          before: { status: 'processing' },
          after: { status: 'failed', attempts: 1, completed_at: row.completed_at },
          data: { item_id: item.item_id, kind: 'issue', punishment_id: item.punishment_id, note: 'User not in guild', ref: null },
        }),
      ]);
    }
  });

  it('failed with retry_after_seconds under the cap: back to pending, paced, not handed out early', async () => {
    const report = await makeReport();
    const item = await makeItem({ reportId: report, attempts: 2 });
    const res = await complete(item.item_id, { result: 'failed', note: 'Rate limited', retry_after_seconds: 90.5 });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.item).toMatchObject({ status: 'pending', attempts: 2, claimed_at: null, completed_at: null, last_error: 'Rate limited', result_note: null });
    const wait = secondsFromNow(body.item.available_at);
    expect(wait).toBeGreaterThan(80);
    expect(wait).toBeLessThanOrEqual(90.5);
    const row = await itemRow(item.item_id);
    expect(row).toMatchObject({ status: 'pending', available_at: body.item.available_at, claimed_at: null, last_error: 'Rate limited' });
    expect(await itemEvents(item.item_id)).toEqual([
      {
        type: 'delivery.requeued',
        actor_kind: 'bot',
        actor_chat_id: null,
        report_id: report,
        before: { status: 'processing' },
        after: { status: 'pending', attempts: 2, available_at: row.available_at },
        data: {
          item_id: item.item_id,
          kind: 'issue',
          punishment_id: item.punishment_id,
          note: 'Rate limited',
          ref: null,
          retry_after_seconds: 90.5,
          available_at: row.available_at,
          transient: true,
        },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
    // Alone in the queue, it is still not handed out before its time.
    await t.db.production.query(`update discipline_deliveries set status = 'cancelled' where status = 'pending' and item_id <> $1::bigint`, [item.item_id]);
    const pickup = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(pickup.statusCode).toBe(204);
    expect((await itemRow(item.item_id)).status).toBe('pending');
  });

  it('failed with retry_after_seconds at the retry cap: terminal, retry_cap_reached', async () => {
    const item = await makeItem({ attempts: 3 });
    const res = await complete(item.item_id, { result: 'failed', note: 'Rate limited', retry_after_seconds: 30 });
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ status: 'failed', attempts: 3, last_error: 'Rate limited' });
    expect((await itemRow(item.item_id)).completed_at).not.toBeNull();
    const events = await itemEvents(item.item_id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'delivery.failed', after: { status: 'failed', attempts: 3 } });
    expect(events[0]!.data).toEqual({
      item_id: item.item_id,
      kind: 'issue',
      punishment_id: item.punishment_id,
      note: 'Rate limited',
      ref: null,
      retry_after_seconds: 30,
      retry_cap_reached: true,
    });
  });

  it('accepts a late completion of an item the sweep put back to pending', async () => {
    const item = await makeItem({ status: 'pending', attempts: 1 });
    const res = await complete(item.item_id, { result: 'success' });
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ status: 'success', result_note: null, ref: null });
    expect(await itemEvents(item.item_id)).toEqual([expect.objectContaining({ type: 'delivery.completed', before: { status: 'pending' } })]);
  });

  it('completes a user_lookup too, with no punishment and no report', async () => {
    const item = await makeItem({ kind: 'user_lookup' });
    const res = await complete(item.item_id, { result: 'failed', note: 'Unknown user' });
    expect(res.statusCode).toBe(200);
    expect(res.json().item).toMatchObject({ kind: 'user_lookup', status: 'failed', punishment: null });
    expect(await itemEvents(item.item_id)).toEqual([expect.objectContaining({ type: 'delivery.failed', report_id: null, data: expect.objectContaining({ kind: 'user_lookup', punishment_id: null }) })]);
  });

  it('404 for an unknown item', async () => {
    const res = await complete(987654321, { result: 'success' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_NOT_FOUND', error: 'Discipline item 987654321 not found' });
  });

  it('409 DISCIPLINE_ALREADY_COMPLETED on a terminal item, nothing written', async () => {
    const item = await makeItem();
    expect((await complete(item.item_id, { result: 'success', ref: 'first' })).statusCode).toBe(200);
    const after = await itemRow(item.item_id);
    const res = await complete(item.item_id, { result: 'failed', note: 'second', retry_after_seconds: 5 });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_ALREADY_COMPLETED', error: `Discipline item ${item.item_id} is already completed (status success)` });
    expect(await itemRow(item.item_id)).toEqual(after);
    expect(await itemEvents(item.item_id)).toHaveLength(1);

    for (const status of ['failed', 'cancelled']) {
      const done = await makeItem({ status });
      const refused = await complete(done.item_id, { result: 'success' });
      expect(refused.statusCode).toBe(409);
      expect(refused.json().error).toBe(`Discipline item ${done.item_id} is already completed (status ${status})`);
      await unchanged(done);
    }
  });

  it('400 for a bad retry_after_seconds or body, nothing written', async () => {
    const item = await makeItem();
    for (const [payload, error] of [
      [{ result: 'failed', retry_after_seconds: -1 }, 'body.retry_after_seconds must be >= 0'],
      [{ result: 'failed', retry_after_seconds: 3601 }, 'body.retry_after_seconds must be <= 3600'],
      [{ result: 'failed', retry_after_seconds: '10' }, 'body.retry_after_seconds must be number or null'],
      [{ result: 'success', retry_after_seconds: 5 }, 'body.retry_after_seconds applies only to result failed'],
      [{ result: 'done' }, 'body.result must be one of: success, failed'],
      [{ note: 'x' }, 'body.result is required'],
      [{ result: 'success', status: 'success' }, 'body.status is not an accepted field'],
      [{ result: 'success', note: 'x'.repeat(2001) }, 'body.note must NOT have more than 2000 characters'],
      [{ result: 'success', ref: 'x'.repeat(201) }, 'body.ref must NOT have more than 200 characters'],
    ] as const) {
      const res = await complete(item.item_id, payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
      expect(res.json()).toEqual({ success: false, code: 'VALIDATION_ERROR', error });
    }
    const badId = await complete(0, { result: 'success' });
    expect(badId.statusCode).toBe(400);
    expect(badId.json().error).toBe('params.item_id must be >= 1');
    await unchanged(item);
  });

  it('is for the API key only', async () => {
    const item = await makeItem();
    const director = await signedIn(t, { clearance: 5, rank: 'Director' });
    const res = await complete(item.item_id, { result: 'success' }, director.headers);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ success: false, code: 'KEY_REQUIRED' });
    await unchanged(item);
  });

  it('is atomic: a failure writing the event leaves the item as it was', async () => {
    const item = await makeItem();
    for (const payload of [{ result: 'success' }, { result: 'failed', retry_after_seconds: 10 }]) {
      const res = await complete(item.item_id, { ...payload, note: REFUSED_NOTE });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ success: false, code: 'DATABASE_ERROR' });
      await unchanged(item);
    }
  });
});

describe.runIf(onPostgres)('concurrent completions (PostgreSQL only)', () => {
  it('two completions of one item: one 200, one 409, one event', async () => {
    const item = await makeItem();
    const answers = await Promise.all([complete(item.item_id, { result: 'success', ref: 'a' }), complete(item.item_id, { result: 'failed', note: 'b' })]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const loser = answers.find((r) => r.statusCode === 409)!;
    expect(loser.json().code).toBe('DISCIPLINE_ALREADY_COMPLETED');
    const winner = answers.find((r) => r.statusCode === 200)!.json().item;
    expect((await itemRow(item.item_id)).status).toBe(winner.status);
    const events = await itemEvents(item.item_id);
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe(winner.status === 'success' ? 'delivery.completed' : 'delivery.failed');
  });
});
