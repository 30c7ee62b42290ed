// Profiles the bot captures for user lookups and the requeue of failed deliveries (spec: States and
// transitions, Discipline delivery item): the rows and events written, and that a refused request
// writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from './helpers/app.js';
import { completionTools, key, openCompletionApp, REFUSED_USER, secondsFromNow } from './helpers/discipline.js';
import { chatId, signedIn } from './helpers/identity.js';

let t: TestApp;
beforeAll(async () => {
  t = await openCompletionApp();
});
afterAll(() => t.close());

const { makeReport, makeItem, itemRow, itemEvents, profileRow, unchanged, post } = completionTools(() => t);

describe('POST /discipline/user-lookup/<item_id>/profile', () => {
  const deliver = (id: number, payload: unknown) => post(`/discipline/user-lookup/${id}/profile`, payload);

  it('stores the profile, completes the lookup, and answers idempotently on retry', async () => {
    const userId = chatId();
    const item = await makeItem({ kind: 'user_lookup', userId });
    const payload = { chat_id: userId, username: 'nightowl', global_name: 'Night Owl', avatar: 'a1b2', banner: 'kept' };
    const res = await deliver(item.item_id, payload);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({ success: true, profile: { chat_id: userId, username: 'nightowl', global_name: 'Night Owl', avatar: 'a1b2', updated_at: expect.any(String) } });
    expect(await profileRow(userId)).toEqual({ chat_id: userId, username: 'nightowl', global_name: 'Night Owl', avatar: 'a1b2', profile: payload, updated_at: body.profile.updated_at });
    const row = await itemRow(item.item_id);
    expect(row).toMatchObject({ status: 'success', result_note: 'Profile captured' });
    expect(row.completed_at).not.toBeNull();
    const expectedEvents = [
      {
        type: 'delivery.completed',
        actor_kind: 'bot',
        actor_chat_id: null,
        report_id: null,
        before: { status: 'processing' },
        after: { status: 'success' },
        data: { item_id: item.item_id, kind: 'user_lookup', user_id: userId },
        correlation_id: res.headers['x-request-id'],
      },
    ];
    expect(await itemEvents(item.item_id)).toEqual(expectedEvents);

    const retry = await deliver(item.item_id, { chat_id: userId, username: 'nightowl2' });
    expect(retry.statusCode).toBe(200);
    expect(retry.json().profile).toMatchObject({ chat_id: userId, username: 'nightowl2', global_name: null, avatar: null });
    expect(await profileRow(userId)).toMatchObject({ username: 'nightowl2', profile: { chat_id: userId, username: 'nightowl2' } });
    expect(await itemRow(item.item_id)).toEqual(row);
    expect(await itemEvents(item.item_id)).toEqual(expectedEvents);
  });

  it('400 when chat_id is not the lookup target, nothing written', async () => {
    const userId = chatId();
    const other = chatId();
    const item = await makeItem({ kind: 'user_lookup', userId });
    const res = await deliver(item.item_id, { chat_id: other, username: 'someone' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, code: 'VALIDATION_ERROR', error: `body.chat_id must match the lookup target ${userId}` });
    const bad = await deliver(item.item_id, { username: 'someone' });
    expect(bad.json()).toMatchObject({ error: 'body.chat_id is required' });
    expect(await profileRow(userId)).toBeUndefined();
    expect(await profileRow(other)).toBeUndefined();
    await unchanged(item);
  });

  it('404 for an unknown item or one that is not a user_lookup', async () => {
    const issue = await makeItem();
    const res = await deliver(issue.item_id, { chat_id: issue.user_id });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_NOT_FOUND', error: `Discipline item ${issue.item_id} not found` });
    expect((await deliver(987654321, { chat_id: issue.user_id })).statusCode).toBe(404);
    expect(await profileRow(issue.user_id)).toBeUndefined();
    await unchanged(issue);
  });

  it('409 on a failed or cancelled lookup, nothing written', async () => {
    for (const status of ['failed', 'cancelled']) {
      const userId = chatId();
      const item = await makeItem({ kind: 'user_lookup', userId, status });
      const res = await deliver(item.item_id, { chat_id: userId, username: 'late' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, code: 'DISCIPLINE_ALREADY_COMPLETED', error: `Discipline item ${item.item_id} is already completed (status ${status})` });
      expect(await profileRow(userId)).toBeUndefined();
      await unchanged(item);
    }
  });

  it('is atomic: a failure writing the event stores no profile', async () => {
    const item = await makeItem({ kind: 'user_lookup', userId: REFUSED_USER });
    const res = await deliver(item.item_id, { chat_id: REFUSED_USER, username: 'ghost' });
    expect(res.statusCode).toBe(500);
    expect(await profileRow(REFUSED_USER)).toBeUndefined();
    await unchanged(item);
  });
});

describe('POST /discipline/<item_id>/requeue', () => {
  const requeue = (id: number, headers: Record<string, string> = key) => post(`/discipline/${id}/requeue`, undefined, headers);

  it('failed to pending with attempts reset, delivery.requeued by the agent', async () => {
    const manager = await signedIn(t, { clearance: 4 });
    const report = await makeReport();
    const item = await makeItem({ reportId: report, status: 'failed', attempts: 3, lastError: 'Rate limited' });
    const res = await requeue(item.item_id, manager.headers);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.item).toMatchObject({ item_id: item.item_id, status: 'pending', attempts: 0, claimed_at: null, completed_at: null, last_error: 'Rate limited', punishment: { report_id: report } });
    expect(Math.abs(secondsFromNow(body.item.available_at))).toBeLessThan(10);
    expect(await itemRow(item.item_id)).toMatchObject({ status: 'pending', attempts: 0, completed_at: null, available_at: body.item.available_at });
    expect(await itemEvents(item.item_id)).toEqual([
      {
        type: 'delivery.requeued',
        actor_kind: 'agent',
        actor_chat_id: manager.agent.chat_id,
        report_id: report,
        before: { status: 'failed', attempts: 3 },
        after: { status: 'pending', attempts: 0 },
        data: { item_id: item.item_id, kind: 'issue', punishment_id: item.punishment_id, last_error: 'Rate limited' },
        correlation_id: res.headers['x-request-id'],
      },
    ]);
    // The requeued item is handed out again.
    await t.db.production.query(`update discipline_deliveries set status = 'cancelled' where status = 'pending' and item_id <> $1::bigint`, [item.item_id]);
    const pickup = await t.app.inject({ method: 'GET', url: '/discipline/next', headers: key });
    expect(pickup.json().item).toMatchObject({ item_id: item.item_id, attempts: 1 });
  });

  it('the key may requeue too', async () => {
    const item = await makeItem({ status: 'failed' });
    const res = await requeue(item.item_id);
    expect(res.statusCode).toBe(200);
    expect(await itemEvents(item.item_id)).toEqual([expect.objectContaining({ type: 'delivery.requeued', actor_kind: 'bot' })]);
  });

  it('409 NOT_FAILED unless failed, 404 when unknown, 403 below manage_punishments: nothing written', async () => {
    for (const status of ['pending', 'processing', 'success', 'cancelled']) {
      const item = await makeItem({ status });
      const res = await requeue(item.item_id);
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ success: false, code: 'NOT_FAILED', error: `Only a failed item can be requeued (status ${status})` });
      await unchanged(item);
    }
    const missing = await requeue(987654321);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('DISCIPLINE_NOT_FOUND');

    const item = await makeItem({ status: 'failed' });
    const viewer = await signedIn(t, { clearance: 3 });
    const res = await requeue(item.item_id, viewer.headers);
    expect(res.statusCode).toBe(403);
    await unchanged(item);
  });

  it('409 LOOKUP_PENDING for a failed lookup whose user has a newer one outstanding', async () => {
    const userId = chatId();
    const failed = await makeItem({ kind: 'user_lookup', userId, status: 'failed' });
    await makeItem({ kind: 'user_lookup', userId, status: 'pending', attempts: 0 });
    const res = await requeue(failed.item_id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, code: 'LOOKUP_PENDING', error: `A user lookup is already pending for ${userId}` });
    await unchanged(failed);
  });
});
