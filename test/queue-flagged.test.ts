// A report's bot actions follow its supervisor flag in every state, and their requeue decides from
// the report's flag as it is now (issue 38, finding 3): an action that failed before its report was
// flagged is not the operator queue's any more. Made through the routes, as the bot and staff make it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let agent: Person;
let senior: Person;
beforeAll(async () => {
  t = await createTestApp();
  agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
  senior = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
});
afterAll(() => t.close());

const call = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) =>
  t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

/** A report whose bot action (a contact of the reporter) was claimed from the operator queue and failed; then the report is flagged. */
async function failedThenFlagged(): Promise<{ reportId: string; actionId: number }> {
  const reportId = `FAILED-THEN-FLAGGED-${chatId()}`;
  expect((await call('POST', '/reports/create', key, { report_id: reportId, reporter: chatId(), reported: chatId(), reason: 'Spam', notes: 'n', evidence: 'e' })).statusCode).toBe(201);
  const asked = await call('POST', `/reports/${reportId}/action`, key, { action: 'contact_reporter', reason: 'Tell us more' });
  expect(asked.statusCode, asked.body).toBe(200);
  for (;;) {
    const next = await call('GET', '/actions/next/operator', key);
    expect(next.statusCode, 'the action was handed out').toBe(200);
    const action = next.json().action as { action_id: number; report_id: string };
    const done = await call('POST', `/actions/${action.action_id}/complete`, key, { result: action.report_id === reportId ? 'failed' : 'success' });
    expect(done.statusCode, done.body).toBe(200);
    if (action.report_id === reportId) {
      const flagged = await call('PATCH', `/reports/${reportId}/update`, key, { is_supervisor: true });
      expect(flagged.statusCode, flagged.body).toBe(200);
      return { reportId, actionId: action.action_id };
    }
  }
}

const actionState = async (actionId: number) => ({
  row: (await t.db.production.query('select queue, status, attempts from report_actions where action_id = $1::bigint', [actionId])).rows[0],
  requeued: (await t.db.production.query(`select count(*)::int as n from events where type = 'queue.action_requeued' and (data->>'action_id')::bigint = $1::bigint`, [actionId])).rows[0]!.n,
});

describe('a failed action of a report flagged afterwards', () => {
  it('moves to the supervisor queue with the flag, failed as it was', async () => {
    const { actionId } = await failedThenFlagged();
    expect(await actionState(actionId)).toEqual({ row: { queue: 'supervisor', status: 'failed', attempts: 1 }, requeued: 0 });
  });

  it('an Agent may not requeue it (403 RANK_REQUIRED, nothing written); the operator bot is never handed it', async () => {
    const { actionId } = await failedThenFlagged();
    const before = await actionState(actionId);
    const refused = await call('POST', `/actions/${actionId}/requeue`, agent.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ success: false, code: 'RANK_REQUIRED', error: 'Senior Agent rank required' });
    expect(await actionState(actionId)).toEqual(before);

    const requeued = await call('POST', `/actions/${actionId}/requeue`, senior.headers);
    expect(requeued.statusCode, requeued.body).toBe(200);
    expect(await actionState(actionId)).toEqual({ row: { queue: 'supervisor', status: 'pending', attempts: 0 }, requeued: 1 });
    const event = (await t.db.production.query(`select is_supervisor, data->>'queue' as queue from events where type = 'queue.action_requeued' and (data->>'action_id')::bigint = $1::bigint`, [actionId])).rows[0];
    expect(event).toEqual({ is_supervisor: true, queue: 'supervisor' });
    // The operator bot drains its queue without meeting it; the supervisor queue hands it out.
    for (;;) {
      const next = await call('GET', '/actions/next/operator', key);
      if (next.statusCode === 204) break;
      expect(next.json().action.action_id).not.toBe(actionId);
      await call('POST', `/actions/${next.json().action.action_id}/complete`, key, { result: 'success' });
    }
    let handed: number | undefined;
    for (;;) {
      const next = await call('GET', '/actions/next/supervisor', key);
      expect(next.statusCode).toBe(200);
      handed = next.json().action.action_id;
      await call('POST', `/actions/${handed}/complete`, key, { result: 'success' });
      if (handed === actionId) break;
    }
    expect(handed).toBe(actionId);
  });
});
