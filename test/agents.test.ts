// Agents (spec: Agents): listing, creation, and both update paths with their guards and audit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function auditRows(target: string) {
  const { rows } = await t.db.production.query(
    `select actor_kind, actor_chat_id, action, target, reason, before, after from audit_log where target = $1::text order by id`,
    [target],
  );
  return rows as Record<string, any>[];
}

async function agentRow(id: string) {
  return (await t.db.production.query('select * from agents where chat_id = $1::text', [id])).rows[0] as Record<string, any> | undefined;
}

describe('authorization matrix', () => {
  const cases: [string, string, string, number][] = [
    ['GET', '/agents', 'view_agents', 2],
    ['GET', '/agents/__target__', 'view_agents', 2],
    ['POST', '/agents/create', 'manage_agents', 4],
  ];
  it.each(cases)('%s %s needs %s (clearance %i) for sessions; the key holds it', async (method, path, _permission, level) => {
    const target = await signedIn(t);
    const url = path.replace('__target__', target.agent.chat_id);
    const payload = () => (method === 'POST' ? { chat_id: chatId() } : undefined);
    const send = (headers: Record<string, string>) => t.app.inject({ method: method as 'GET', url, headers, ...(payload() ? { payload: payload() } : {}) });
    const ok = method === 'POST' ? 201 : 200;

    expect((await send({})).statusCode).toBe(401);
    expect((await send({ authorization: 'wrong' })).statusCode).toBe(401);
    expect((await send(key)).statusCode).toBe(ok);
    for (let clearance = 1; clearance <= 5; clearance++) {
      const person = await signedIn(t, { clearance, rank: 'Director' });
      const res = await send(person.headers);
      expect(res.statusCode, `clearance ${clearance}`).toBe(clearance >= level ? ok : 403);
      if (clearance < level) expect(res.json()).toEqual({ success: false, error: 'Insufficient clearance', code: 'INSUFFICIENT_CLEARANCE' });
    }
  });
});

describe('GET /agents', () => {
  it('lists all agents newest first, filtered by status', async () => {
    const a = await signedIn(t, { status: 'onboarding' });
    const b = await signedIn(t, { status: 'onboarding' });
    const all = (await t.app.inject({ url: '/agents', headers: key })).json();
    expect(all.success).toBe(true);
    const ids = all.agents.map((x: { chat_id: string }) => x.chat_id);
    expect(ids.indexOf(b.agent.chat_id)).toBeLessThan(ids.indexOf(a.agent.chat_id));
    const created = all.agents.map((x: { created_at: string }) => x.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    const onboarding = (await t.app.inject({ url: '/agents?status=onboarding', headers: key })).json();
    expect(onboarding.agents.length).toBeGreaterThanOrEqual(2);
    expect(onboarding.agents.every((x: { status: string }) => x.status === 'onboarding')).toBe(true);
    expect((await t.app.inject({ url: '/agents?status=retired', headers: key })).statusCode).toBe(400);
  });

  it('GET /agents/<chat_id>: the agent, 404 unknown, 400 malformed', async () => {
    const a = await signedIn(t);
    const res = await t.app.inject({ url: `/agents/${a.agent.chat_id}`, headers: key });
    expect(res.json()).toEqual({ success: true, agent: a.agent });
    const missing = await t.app.inject({ url: '/agents/999999999999999999', headers: key });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ success: false, error: 'Agent 999999999999999999 not found', code: 'NOT_FOUND' });
    expect((await t.app.inject({ url: '/agents/abc', headers: key })).statusCode).toBe(400);
  });
});

describe('POST /agents/create', () => {
  it('creates an onboarding agent with null onboarding identifiers, audited', async () => {
    const id = chatId();
    const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers: key, payload: { chat_id: id, name: 'Nia New', agent_rank: 'Agent' } });
    expect(res.statusCode).toBe(201);
    expect(res.json().agent).toMatchObject({
      chat_id: id,
      name: 'Nia New',
      status: 'onboarding',
      agent_rank: 'Agent',
      security_id: null,
      agreement_id: null,
      agent_id: null,
      clearance_id: null,
      clearance_level: null,
      is_trainer: false,
    });
    expect(await agentRow(id)).toMatchObject({ status: 'onboarding', name: 'Nia New' });
    expect(await auditRows(id)).toEqual([
      expect.objectContaining({ actor_kind: 'bot', action: 'agent.created', target: id, before: null, after: expect.objectContaining({ chat_id: id }) }),
    ]);
  });

  it('409 on a duplicate, with nothing else written', async () => {
    const a = await signedIn(t);
    const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers: key, payload: { chat_id: a.agent.chat_id } });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ success: false, error: `Agent ${a.agent.chat_id} already exists`, code: 'DUPLICATE' });
    expect(await auditRows(a.agent.chat_id)).toEqual([]);
  });

  it.each([
    [{}, 'body.chat_id is required'],
    [{ chat_id: '12ab' }, 'body.chat_id must match pattern "^[0-9]{1,20}$"'],
    [{ chat_id: 123 }, 'body.chat_id must be string'],
    [{ chat_id: '1', clearance_level: 3 }, 'body.clearance_level is not an accepted field'],
    [{ chat_id: '1', agent_rank: 'Emperor' }, 'body.agent_rank must be one of: Agent, Senior Agent, Supervisor, Head Investigator, Director'],
    [{ chat_id: '1', name: 'x'.repeat(101) }, 'body.name must NOT have more than 100 characters'],
  ])('400 for %j', async (payload, error) => {
    const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers: key, payload });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
  });

  it('a session may not create an agent ranked above itself', async () => {
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers: supervisor.headers, payload: { chat_id: chatId(), agent_rank: 'Director' } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'RANK_HIERARCHY' });
  });
});

describe('PATCH /agents/<chat_id>/update, bot path', () => {
  const update = (id: string, payload: object) => t.app.inject({ method: 'PATCH', url: `/agents/${id}/update`, headers: key, payload });

  it('sets the whitelisted onboarding fields and audits before and after', async () => {
    const a = await signedIn(t, { status: 'onboarding', clearance: null });
    const res = await update(a.agent.chat_id, {
      name: 'Ola Onboarded',
      status: 'active',
      security_id: 'SEC-1',
      agreement_id: 'AGM-12345',
      agent_id: 'SVC-AG-54321',
      clearance_id: 'CL-123',
      clearance_level: 2,
    });
    expect(res.statusCode).toBe(200);
    const agent = res.json().agent;
    expect(agent).toMatchObject({ name: 'Ola Onboarded', status: 'active', agreement_id: 'AGM-12345', clearance_level: 2 });
    expect(Date.parse(agent.updated_at)).toBeGreaterThanOrEqual(Date.parse(a.agent.updated_at));
    expect(await agentRow(a.agent.chat_id)).toMatchObject({ status: 'active', agent_id: 'SVC-AG-54321', clearance_id: 'CL-123' });
    const [audit] = await auditRows(a.agent.chat_id);
    expect(audit).toMatchObject({ actor_kind: 'bot', action: 'agent.updated', before: { status: 'onboarding', clearance_level: null }, after: { status: 'active', clearance_level: 2 } });
  });

  it.each([
    [{ agent_rank: 'Director' }, 'body.agent_rank cannot be changed by the bot'],
    [{ is_trainer: true }, 'body.is_trainer is not an accepted field for the bot'],
    [{ nickname: 'x' }, 'body.nickname is not an accepted field'],
    [{ clearance_level: 6 }, 'body.clearance_level must be <= 5'],
    [{ clearance_level: 0 }, 'body.clearance_level must be >= 1'],
    [{ clearance_level: '3' }, 'body.clearance_level must be integer'],
    [{ agreement_id: 'AGM-1' }, 'body.agreement_id must match pattern "^AGM-[0-9]{5}$"'],
    [{ agreement_id: 12345 }, 'body.agreement_id must be string or null'],
    [{ status: 'retired' }, 'body.status must be one of: onboarding, active, suspended, inactive'],
    [{}, 'body has no field to update'],
  ])('400 for %j, nothing written', async (payload, error) => {
    const a = await signedIn(t);
    const res = await update(a.agent.chat_id, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
    expect(await agentRow(a.agent.chat_id)).toMatchObject({ agent_rank: 'Agent', clearance_level: 2, is_trainer: false });
    expect(await auditRows(a.agent.chat_id)).toEqual([]);
  });

  it('404 for an unknown agent', async () => {
    const res = await update('999999999999999998', { name: 'Nobody' });
    expect(res.statusCode).toBe(404);
  });
});

describe('PATCH /agents/<chat_id>/update, dashboard path', () => {
  let admin: Person;
  let director: Person;
  beforeAll(async () => {
    admin = await signedIn(t, { rank: 'Supervisor', clearance: 4, allowlisted: true });
    director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
  });
  const update = (who: Person, id: string, payload: object) =>
    t.app.inject({ method: 'PATCH', url: `/agents/${id}/update`, headers: who.headers, payload });

  it('an allowlisted admin_agents holder updates with a reason, audited with actor and reason', async () => {
    const target = await signedIn(t);
    const res = await update(admin, target.agent.chat_id, { name: 'Renamed', is_trainer: true, reason: 'Runs the Tuesday course' });
    expect(res.statusCode).toBe(200);
    expect(res.json().agent).toMatchObject({ name: 'Renamed', is_trainer: true });
    expect(await auditRows(target.agent.chat_id)).toEqual([
      expect.objectContaining({
        actor_kind: 'agent',
        actor_chat_id: admin.agent.chat_id,
        action: 'agent.updated',
        reason: 'Runs the Tuesday course',
        before: expect.objectContaining({ is_trainer: false }),
        after: expect.objectContaining({ is_trainer: true, name: 'Renamed' }),
      }),
    ]);
  });

  it.each([
    ['no reason', () => admin, { name: 'X' }, 400, 'body.reason is required'],
    ['not on the allowlist', null, { name: 'X', reason: 'r' }, 403, 'Not an admin user'],
    ['a clearance change by a non-Director', () => admin, { clearance_level: 3, reason: 'r' }, 403, 'Director access required'],
    ['a rank change by a non-Director', () => admin, { agent_rank: 'Senior Agent', reason: 'r' }, 403, 'Director access required'],
  ])('%s: %i', async (_label, who, payload, status, error) => {
    const caller = who ? who() : await signedIn(t, { rank: 'Director', clearance: 5 });
    const target = await signedIn(t);
    const res = await update(caller, target.agent.chat_id, payload);
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ success: false, error });
    expect(await agentRow(target.agent.chat_id)).toMatchObject({ name: target.agent.name, clearance_level: 2, agent_rank: 'Agent' });
    expect(await auditRows(target.agent.chat_id)).toEqual([]);
  });

  it('an allowlisted agent below clearance 4: Insufficient clearance', async () => {
    const low = await signedIn(t, { rank: 'Director', clearance: 3, allowlisted: true });
    const target = await signedIn(t);
    const res = await update(low, target.agent.chat_id, { name: 'X', reason: 'r' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toBe('Insufficient clearance');
  });

  it('blocks self-modification, even for a Director', async () => {
    const res = await update(director, director.agent.chat_id, { name: 'Me', reason: 'r' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'SELF_MODIFICATION' });
  });

  it('a non-Director cannot touch an agent ranked above them', async () => {
    const head = await signedIn(t, { rank: 'Head Investigator', clearance: 4 });
    const res = await update(admin, head.agent.chat_id, { name: 'X', reason: 'r' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'RANK_HIERARCHY' });
  });

  it('a Director changes rank and clearance', async () => {
    const target = await signedIn(t);
    const res = await update(director, target.agent.chat_id, { agent_rank: 'Senior Agent', clearance_level: 3, reason: 'Promotion board 11/2026' });
    expect(res.statusCode).toBe(200);
    expect(await agentRow(target.agent.chat_id)).toMatchObject({ agent_rank: 'Senior Agent', clearance_level: 3 });
  });
});
