// Agent administration (spec: GET /admin/agents, PATCH /admin/agents/<chat_id>): the whitelist,
// Director-only rank and clearance changes, no self-modification, the hierarchy guard, the last
// Director, and the trail: one audit row and one admin.agent_updated event per change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { admin, expectAdminTrail, trailCounts } from './helpers/admin.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { insertAgent } from '../src/agents/queries.js';

const refusal = (error: string, code: string) => ({ success: false, error, code });

describe('admin agents', () => {
  let t: TestApp;
  let director: Person;
  let head: Person;
  const patch = (id: string, payload: unknown, headers: Record<string, string> = director.headers) =>
    t.app.inject({ method: 'PATCH', url: `/admin/agents/${id}`, headers, payload: payload as object });
  const agentRow = async (id: string) => (await t.db.production.query('select * from agents where chat_id = $1::text', [id])).rows[0] as Record<string, unknown>;
  const newAgent = async (rank = 'Agent', clearance = 2) =>
    (await insertAgent(t.db.production, { chat_id: chatId(), name: 'Target', status: 'active', agent_rank: rank, clearance_level: clearance }))!;

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t, { name: 'Dana Director' });
    head = await admin(t, { rank: 'Head Investigator', clearance: 4 });
  });
  afterAll(() => t.close());

  it('lists every agent with its allowlist flag', async () => {
    const plain = await newAgent();
    const res = await t.app.inject({ method: 'GET', url: '/admin/agents', headers: head.headers });
    expect(res.statusCode).toBe(200);
    const agents = res.json().agents as Record<string, unknown>[];
    expect(agents.find((a) => a.chat_id === director.agent.chat_id)).toMatchObject({ agent_rank: 'Director', allowlisted: true });
    expect(agents.find((a) => a.chat_id === plain.chat_id)).toMatchObject({ name: 'Target', allowlisted: false, status: 'active' });
  });

  it('changes whitelisted fields, answering the agent, what changed and the correlation id, audited with before and after', async () => {
    const target = await newAgent();
    const res = await patch(target.chat_id, { fields: { agent_rank: 'Senior Agent', clearance_level: 3, name: 'Target' }, reason: 'Promotion board 2026-11' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.agent).toMatchObject({ chat_id: target.chat_id, agent_rank: 'Senior Agent', clearance_level: 3 });
    expect(body.changed).toEqual(['agent_rank', 'clearance_level']);
    expect(await agentRow(target.chat_id)).toMatchObject({ agent_rank: 'Senior Agent', clearance_level: 3 });
    const { audit, event } = await expectAdminTrail(t, body.correlation_id, {
      action: 'admin.agent_updated', actor: director.agent.chat_id, target: target.chat_id, reason: 'Promotion board 2026-11',
    });
    expect(audit.before).toEqual({ agent_rank: 'Agent', clearance_level: 2 });
    expect(audit.after).toEqual({ agent_rank: 'Senior Agent', clearance_level: 3 });
    expect(event.before).toEqual(audit.before);
  });

  it('writes nothing when every value is already so', async () => {
    const target = await newAgent();
    const before = await trailCounts(t);
    const res = await patch(target.chat_id, { fields: { agent_rank: 'Agent' }, reason: 'Check' });
    expect(res.json()).toMatchObject({ success: true, changed: [], correlation_id: null });
    expect(await trailCounts(t)).toEqual(before);
  });

  it('refuses bad input with 400 naming it, writing nothing', async () => {
    const target = await newAgent();
    const before = await trailCounts(t);
    const cases: [unknown, string][] = [
      [{ fields: { name: 'X' } }, 'body.reason is required'],
      [{ fields: { name: 'X' }, reason: ' ' }, 'body.reason must not be blank'],
      [{ fields: { chat_id: '1' }, reason: 'r' }, 'body.fields.chat_id is not an accepted field'],
      [{ fields: { clearance_level: 6 }, reason: 'r' }, 'body.fields.clearance_level must be <= 5'],
      [{ fields: { clearance_level: 0 }, reason: 'r' }, 'body.fields.clearance_level must be >= 1'],
      [{ fields: { agent_rank: 'Overlord' }, reason: 'r' }, 'body.fields.agent_rank must be one of: Agent, Senior Agent, Supervisor, Head Investigator, Director'],
      [{ fields: {}, reason: 'r' }, 'body.fields must NOT have fewer than 1 properties'],
    ];
    for (const [payload, error] of cases) {
      const res = await patch(target.chat_id, payload);
      expect(res.statusCode, error).toBe(400);
      expect(res.json(), error).toEqual(refusal(error, 'VALIDATION_ERROR'));
    }
    expect(await trailCounts(t)).toEqual(before);
    expect(await agentRow(target.chat_id)).toMatchObject({ agent_rank: 'Agent', clearance_level: 2 });
  });

  it('answers 404 for an unknown agent', async () => {
    const res = await patch('399999999999999999', { fields: { name: 'Ghost' }, reason: 'r' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(refusal('Agent 399999999999999999 not found', 'NOT_FOUND'));
  });

  it('keeps rank and clearance changes for Directors, blocks self-modification and targets above the caller', async () => {
    const target = await newAgent();
    const before = await trailCounts(t);
    expect((await patch(target.chat_id, { fields: { clearance_level: 3 }, reason: 'r' }, head.headers)).json()).toEqual(refusal('Director access required', 'DIRECTOR_REQUIRED'));
    expect((await patch(target.chat_id, { fields: { agent_rank: 'Supervisor' }, reason: 'r' }, head.headers)).json()).toEqual(refusal('Director access required', 'DIRECTOR_REQUIRED'));
    expect((await patch(director.agent.chat_id, { fields: { name: 'Boss' }, reason: 'r' }, head.headers)).json()).toEqual(
      refusal('You cannot modify an agent ranked above yourself', 'RANK_HIERARCHY'),
    );
    expect((await patch(director.agent.chat_id, { fields: { name: 'Me' }, reason: 'r' })).json()).toEqual(refusal('You cannot modify your own agent record', 'SELF_MODIFICATION'));
    expect(await trailCounts(t)).toEqual(before);
    // A Head Investigator may still change what is not rank or clearance on an agent below.
    const renamed = await patch(target.chat_id, { fields: { name: 'Renamed', is_trainer: true }, reason: 'Typo in the name' }, head.headers);
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json().changed).toEqual(['name', 'is_trainer']);
  });

  it('applies a demotion to the demoted admin’s very next request', async () => {
    const deputy = await admin(t, { rank: 'Supervisor', clearance: 4 });
    expect((await t.app.inject({ method: 'GET', url: '/admin/agents', headers: deputy.headers })).statusCode).toBe(200);
    await patch(deputy.agent.chat_id, { fields: { clearance_level: 2 }, reason: 'Left the admin team' });
    const after = await t.app.inject({ method: 'GET', url: '/admin/agents', headers: deputy.headers });
    expect(after.statusCode).toBe(403);
    expect(after.json()).toEqual(refusal('Insufficient clearance', 'INSUFFICIENT_CLEARANCE'));
  });

  it('never leaves the organisation without an active Director on the allowlist', async () => {
    const t2 = await createTestApp();
    try {
      const only = await admin(t2);
      const other = await admin(t2);
      // Two Directors: one may demote the other; the survivor is then the last one.
      const demote = await t2.app.inject({ method: 'PATCH', url: `/admin/agents/${other.agent.chat_id}`, headers: only.headers, payload: { fields: { agent_rank: 'Head Investigator' }, reason: 'Handover' } });
      expect(demote.statusCode).toBe(200);
      // The bot path may not deactivate the last Director either.
      const key = { authorization: t2.config.environments.production.apiKey! };
      const res = await t2.app.inject({ method: 'PATCH', url: `/agents/${only.agent.chat_id}/update`, headers: key, payload: { status: 'inactive' } });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual(refusal('This change would leave the organisation without an active Director on the admin allowlist', 'LAST_DIRECTOR'));
      expect((await t2.db.production.query('select status from agents where chat_id = $1::text', [only.agent.chat_id])).rows[0]).toEqual({ status: 'active' });
    } finally {
      await t2.close();
    }
  });

  it('refuses a signed-in agent without admin rights on the dashboard path of /agents/<id>/update too', async () => {
    const plain = await signedIn(t, { rank: 'Director', clearance: 5 });
    const target = await newAgent();
    const res = await t.app.inject({ method: 'PATCH', url: `/agents/${target.chat_id}/update`, headers: plain.headers, payload: { name: 'X', reason: 'r' } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(refusal('Not an admin user', 'NOT_ADMIN'));
  });
});
