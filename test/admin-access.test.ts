// The admin allowlist (spec: GET /admin/access, POST /admin/access/grant|revoke|remove): Director
// only, each change with its audit row and event, Directors protected, and a grant or revoke
// honoured on the very next request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAgent } from '../src/agents/queries.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { admin, expectAdminTrail, trailCounts } from './helpers/admin.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const refusal = (error: string, code: string) => ({ success: false, error, code });

describe('admin access (the allowlist)', () => {
  let t: TestApp;
  let director: Person;
  const post = (operation: string, payload: unknown, headers: Record<string, string> = director.headers) =>
    t.app.inject({ method: 'POST', url: `/admin/access/${operation}`, headers, payload: payload as object });
  const entry = async (id: string) => (await t.db.production.query('select active, granted_by from admin_allowlist where chat_id = $1::text', [id])).rows[0];

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t, { name: 'Dana Director' });
  });
  afterAll(() => t.close());

  it('grants, revokes (the entry stays listed), grants again and removes, each audited', async () => {
    const colleague = await signedIn(t, { rank: 'Supervisor', clearance: 4, name: 'Sam Supervisor' });
    const seeAdmin = () => t.app.inject({ method: 'GET', url: '/admin/audit', headers: colleague.headers });
    expect((await seeAdmin()).statusCode).toBe(403);

    const granted = await post('grant', { chat_id: colleague.agent.chat_id, reason: 'Joins the admin team' });
    expect(granted.statusCode).toBe(200);
    expect(granted.json()).toMatchObject({ success: true, entry: { chat_id: colleague.agent.chat_id, active: true, granted_by: director.agent.chat_id, name: 'Sam Supervisor' } });
    const grantTrail = await expectAdminTrail(t, granted.json().correlation_id, { action: 'admin.access_granted', actor: director.agent.chat_id, target: colleague.agent.chat_id, reason: 'Joins the admin team' });
    expect(grantTrail.audit).toMatchObject({ before: null, after: { active: true } });
    // The very next request of the new admin passes require_admin.
    expect((await seeAdmin()).statusCode).toBe(200);

    const revoked = await post('revoke', { chat_id: colleague.agent.chat_id, reason: 'Left the team' });
    expect(revoked.json().entry).toMatchObject({ active: false });
    expect((await expectAdminTrail(t, revoked.json().correlation_id, { action: 'admin.access_revoked', actor: director.agent.chat_id, target: colleague.agent.chat_id, reason: 'Left the team' })).audit).toMatchObject({
      before: { active: true },
      after: { active: false },
    });
    expect(await entry(colleague.agent.chat_id)).toEqual({ active: false, granted_by: director.agent.chat_id });
    expect((await seeAdmin()).json()).toEqual(refusal('Not an admin user', 'NOT_ADMIN'));
    const listed = (await t.app.inject({ method: 'GET', url: '/admin/access', headers: director.headers })).json().entries;
    expect(listed.find((e: { chat_id: string }) => e.chat_id === colleague.agent.chat_id)).toMatchObject({ active: false, agent_rank: 'Supervisor' });

    expect((await post('grant', { chat_id: colleague.agent.chat_id, reason: 'Back' })).json().entry.active).toBe(true);
    const removed = await post('remove', { chat_id: colleague.agent.chat_id, reason: 'Role ended' });
    expect(removed.json()).toMatchObject({ success: true, entry: null });
    expect((await expectAdminTrail(t, removed.json().correlation_id, { action: 'admin.access_removed', actor: director.agent.chat_id, target: colleague.agent.chat_id, reason: 'Role ended' })).audit).toMatchObject({
      before: { active: true },
      after: null,
    });
    expect(await entry(colleague.agent.chat_id)).toBeUndefined();
  });

  it('protects Directors from revoke and remove with 403 DIRECTOR_PROTECTED, writing nothing', async () => {
    const other = await admin(t);
    const before = await trailCounts(t);
    for (const operation of ['revoke', 'remove']) {
      const res = await post(operation, { chat_id: other.agent.chat_id, reason: 'Coup' });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual(refusal('A Director cannot be revoked or removed from the admin allowlist', 'DIRECTOR_PROTECTED'));
    }
    expect(await trailCounts(t)).toEqual(before);
    expect(await entry(other.agent.chat_id)).toMatchObject({ active: true });
  });

  it('answers 404 for unknown agents or entries and 409 for a change already made', async () => {
    const plain = (await insertAgent(t.db.production, { chat_id: chatId(), name: 'Plain', status: 'active', agent_rank: 'Agent', clearance_level: 2 }))!;
    const before = await trailCounts(t);
    expect((await post('grant', { chat_id: '399999999999999998', reason: 'r' })).json()).toEqual(refusal('Agent 399999999999999998 not found', 'NOT_FOUND'));
    expect((await post('revoke', { chat_id: plain.chat_id, reason: 'r' })).json()).toEqual(refusal(`Agent ${plain.chat_id} on the admin allowlist not found`, 'NOT_FOUND'));
    expect((await post('remove', { chat_id: plain.chat_id, reason: 'r' })).statusCode).toBe(404);
    expect((await post('grant', { chat_id: director.agent.chat_id, reason: 'r' })).json()).toEqual(refusal(`Agent ${director.agent.chat_id} already has admin access`, 'ALREADY_GRANTED'));
    expect(await trailCounts(t)).toEqual(before);
    await post('grant', { chat_id: plain.chat_id, reason: 'r' });
    await post('revoke', { chat_id: plain.chat_id, reason: 'r' });
    expect((await post('revoke', { chat_id: plain.chat_id, reason: 'r' })).json()).toEqual(refusal(`Agent ${plain.chat_id}'s admin access is already revoked`, 'ALREADY_REVOKED'));
  });

  it('refuses bad bodies with 400 naming the field', async () => {
    const before = await trailCounts(t);
    expect((await post('grant', { chat_id: director.agent.chat_id })).json()).toEqual(refusal('body.reason is required', 'VALIDATION_ERROR'));
    expect((await post('grant', { reason: 'r' })).json()).toEqual(refusal('body.chat_id is required', 'VALIDATION_ERROR'));
    expect((await post('grant', { chat_id: 'abc', reason: 'r' })).statusCode).toBe(400);
    expect((await post('revoke', { chat_id: director.agent.chat_id, reason: 'r', active: false })).json()).toEqual(refusal('body.active is not an accepted field', 'VALIDATION_ERROR'));
    expect(await trailCounts(t)).toEqual(before);
  });

  it('lists the allowlist for Directors only, active entries first', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/admin/access', headers: director.headers });
    expect(res.statusCode).toBe(200);
    const entries = res.json().entries as { active: boolean; chat_id: string }[];
    expect(entries.find((e) => e.chat_id === director.agent.chat_id)).toMatchObject({ active: true, agent_rank: 'Director', status: 'active', name: 'Dana Director' });
    expect(entries.map((e) => e.active)).toEqual([...entries.map((e) => e.active)].sort((a, b) => Number(b) - Number(a)));
  });
});
