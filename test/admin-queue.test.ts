// Queue control (spec: System administration; States and transitions, Report queue action):
// the admin list, requeue of failed actions, cancel of pending or processing ones (the bot's
// late completion then answers 409), and the sweep on demand, each with its audit row and event.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { createQueueTestApp, emptyQueue, key, queueHelpers, refusal, type Row } from './helpers/action-queue.js';
import { admin, expectAdminTrail, trailCounts } from './helpers/admin.js';
import type { Person } from './helpers/identity.js';

describe('admin queue control', () => {
  let t: TestApp;
  let director: Person;
  const { makeReport, makeAction, actionRow } = queueHelpers(() => t);
  const post = (url: string, payload: unknown, headers: Record<string, string> = director.headers) =>
    t.app.inject({ method: 'POST', url, headers, payload: payload as object });
  const list = (query = '') => t.app.inject({ method: 'GET', url: `/admin/queue${query}`, headers: director.headers });

  beforeAll(async () => {
    t = await createQueueTestApp();
    director = await admin(t);
  });
  afterAll(() => t.close());
  beforeEach(() => emptyQueue(t));

  it('lists pending, processing and failed actions by default, oldest first, with report basics and the total', async () => {
    const report = await makeReport();
    const pending = await makeAction(report);
    const processing = await makeAction(report, { status: 'processing' });
    const failed = await makeAction(report, { status: 'failed', last_error: 'Missing permissions' });
    await makeAction(report, { status: 'success' });
    await makeAction(report, { status: 'cancelled' });

    const res = await list();
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.count).toBe(3);
    expect(body.actions.map((a: Row) => [a.action_id, a.status])).toEqual([
      [pending, 'pending'],
      [processing, 'processing'],
      [failed, 'failed'],
    ]);
    expect(body.actions[2]).toMatchObject({ last_error: 'Missing permissions', report: { report_id: report, reporter: '300000000000000001' } });

    const done = (await list('?status=success,cancelled')).json();
    expect(done.actions.map((a: Row) => a.status)).toEqual(['success', 'cancelled']);
  });

  it('pages at most 200 rows and refuses an unknown status or a larger limit', async () => {
    const report = await makeReport();
    for (let i = 0; i < 3; i++) await makeAction(report);
    const page = (await list('?limit=2&offset=1')).json();
    expect(page.count).toBe(3);
    expect(page.actions).toHaveLength(2);
    expect((await list('?limit=201')).json()).toEqual(refusal('querystring.limit must be <= 200', 'VALIDATION_ERROR'));
    const bad = await list('?status=pending,lost');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toContain('unknown status "lost"');
  });

  it('requeues a failed action with a fresh retry budget, audited as admin.queue_requeued', async () => {
    const report = await makeReport();
    const id = await makeAction(report, { status: 'failed', attempts: 3, last_error: 'Bot offline' });
    const res = await post(`/admin/queue/${id}/requeue`, { reason: 'Bot is back online' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.action).toMatchObject({ action_id: id, status: 'pending', attempts: 0, last_error: 'Bot offline' });
    expect(body.correlation_id).toEqual(expect.any(String));
    expect(await actionRow(id)).toMatchObject({ status: 'pending', attempts: 0 });
    const { audit } = await expectAdminTrail(t, body.correlation_id, { action: 'admin.queue_requeued', actor: director.agent.chat_id, target: String(id), reason: 'Bot is back online' });
    expect(audit.before).toEqual({ status: 'failed', attempts: 3 });
    expect(audit.after).toEqual({ status: 'pending', attempts: 0 });
    // The state change writes its own event too (spec: States, "queue.action_requeued event").
    const types = (await t.db.production.query<Row>('select type from events where correlation_id = $1::text order by id', [body.correlation_id])).rows.map((r) => r.type);
    expect(types).toEqual(['queue.action_requeued', 'admin.queue_requeued']);
  });

  it('refuses to requeue anything but a failed action, and unknown ids, writing nothing', async () => {
    const report = await makeReport();
    const pending = await makeAction(report);
    const before = await trailCounts(t);
    const res = await post(`/admin/queue/${pending}/requeue`, { reason: 'Try again' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual(refusal('Only a failed action can be requeued (status pending)', 'NOT_FAILED'));
    const missing = await post('/admin/queue/999999999/requeue', { reason: 'Try again' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('ACTION_NOT_FOUND');
    expect(await trailCounts(t)).toEqual(before);
  });

  it('needs a reason: missing, empty or blank is 400 and nothing changes', async () => {
    const report = await makeReport();
    const id = await makeAction(report, { status: 'failed' });
    const before = await trailCounts(t);
    expect((await post(`/admin/queue/${id}/requeue`, {})).json()).toEqual(refusal('body.reason is required', 'VALIDATION_ERROR'));
    expect((await post(`/admin/queue/${id}/cancel`, { reason: '' })).statusCode).toBe(400);
    expect((await post('/admin/queue/sweep', { reason: '   ' })).json()).toEqual(refusal('body.reason must not be blank', 'VALIDATION_ERROR'));
    expect(await actionRow(id)).toMatchObject({ status: 'failed' });
    expect(await trailCounts(t)).toEqual(before);
  });

  it('cancels a pending or processing action; the bot completing it then gets 409 ACTION_ALREADY_COMPLETED', async () => {
    const report = await makeReport();
    const processing = await makeAction(report, { status: 'processing' });
    const res = await post(`/admin/queue/${processing}/cancel`, { reason: 'Reporter withdrew the case' });
    expect(res.statusCode).toBe(200);
    expect(res.json().action).toMatchObject({ action_id: processing, status: 'cancelled', result_note: 'Reporter withdrew the case', claimed_at: null });
    const { audit } = await expectAdminTrail(t, res.json().correlation_id, {
      action: 'admin.queue_cancelled', actor: director.agent.chat_id, target: String(processing), reason: 'Reporter withdrew the case',
    });
    expect(audit.before).toEqual({ status: 'processing', attempts: 1 });
    expect(audit.after).toEqual({ status: 'cancelled', attempts: 1 });

    const late = await post(`/actions/${processing}/complete`, { result: 'success' }, key);
    expect(late.statusCode).toBe(409);
    expect(late.json().code).toBe('ACTION_ALREADY_COMPLETED');
    expect(await actionRow(processing)).toMatchObject({ status: 'cancelled' });

    const pending = await makeAction(report);
    expect((await post(`/admin/queue/${pending}/cancel`, { reason: 'Duplicate' })).json().action.status).toBe('cancelled');
  });

  it('refuses to cancel a finished action', async () => {
    const report = await makeReport();
    for (const status of ['success', 'failed', 'cancelled']) {
      const id = await makeAction(report, { status });
      const before = await trailCounts(t);
      const res = await post(`/admin/queue/${id}/cancel`, { reason: 'Stop it' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual(refusal(`Only a pending or processing action can be cancelled (status ${status})`, 'NOT_CANCELLABLE'));
      expect(await trailCounts(t)).toEqual(before);
    }
  });

  it('sweeps both queues on demand with the pickups’ sweep, and says what it moved', async () => {
    const report = await makeReport();
    const stale = await makeAction(report, { status: 'processing', claimedAgo: 120, attempts: 1 });
    const capped = await makeAction(report, { status: 'processing', claimedAgo: 120, attempts: 3 });
    const fresh = await makeAction(report, { status: 'processing', claimedAgo: 5 });
    const res = await post('/admin/queue/sweep', { reason: 'Bot restarted' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.requeued).toEqual({ report_actions: [stale], discipline_deliveries: [] });
    expect(body.failed).toEqual({ report_actions: [capped], discipline_deliveries: [] });
    expect(await actionRow(stale)).toMatchObject({ status: 'pending' });
    expect(await actionRow(capped)).toMatchObject({ status: 'failed' });
    expect(await actionRow(fresh)).toMatchObject({ status: 'processing' });
    const { audit, event } = await expectAdminTrail(t, body.correlation_id, { action: 'admin.queue_swept', actor: director.agent.chat_id, target: null, reason: 'Bot restarted' });
    expect(audit.after).toEqual({ requeued: body.requeued, failed: body.failed });
    expect(event.after).toEqual({ requeued: body.requeued, failed: body.failed });
    // The moved rows' own events carry the same correlation id.
    const swept = (await t.db.production.query<Row>("select type from events where correlation_id = $1::text and type like 'queue.%' order by id", [body.correlation_id])).rows;
    expect(swept.map((r) => r.type).sort()).toEqual(['queue.action_failed', 'queue.action_requeued']);

    const again = (await post('/admin/queue/sweep', { reason: 'Once more' })).json();
    expect(again.requeued).toEqual({ report_actions: [], discipline_deliveries: [] });
    expect(again.failed).toEqual({ report_actions: [], discipline_deliveries: [] });
  });
});
