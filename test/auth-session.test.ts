// Sessions: the live agent row on every request, environment binding, the Origin check,
// GET /auth/me and POST /auth/logout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken, SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { authNotificationsDelivered, createTestApp, DASHBOARD_ORIGIN, PRODUCTION_KEY, TRAINING_ORIGIN, type TestApp } from './helpers/app.js';
import { onPostgres } from './helpers/stores.js';
import { signedIn } from './helpers/identity.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const me = (headers: Record<string, string>) => t.app.inject({ url: '/auth/me', headers });

describe('GET /auth/me', () => {
  it('returns the live agent, every permission flag, the supervisor flag, the clearance table and admin capabilities', async () => {
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4, allowlisted: true, name: 'Sam Supervisor' });
    const res = await me(supervisor.headers);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.success).toBe(true);
    expect(body.agent).toEqual(supervisor.agent);
    expect(body.can_handle_supervisor).toBe(true);
    expect(body.minimum_clearances).toMatchObject({ view_dashboard: 1, manage_dockets: 2, reassign_docket: 3, manage_punishments: 4, delete_docket: 5 });
    expect(body.permissions).toMatchObject({ manage_punishments: true, admin_agents: true, delete_docket: false, reassign_docket: false });
    expect(body.admin).toEqual({
      allowlisted: true,
      capabilities: {
        admin_health: true,
        admin_queue: true,
        admin_audit: true,
        admin_agents: true,
        admin_reports: false,
        admin_schema: false,
        admin_access: false,
      },
    });
  });

  it('gives no admin capability without an active allowlist entry', async () => {
    const agent = await signedIn(t, { rank: 'Director', clearance: 5 });
    const body = (await me(agent.headers)).json();
    expect(body.admin.allowlisted).toBe(false);
    expect(Object.values(body.admin.capabilities)).toEqual(Array(7).fill(false));
    await t.db.production.query('insert into admin_allowlist (chat_id, active) values ($1::text, false)', [agent.agent.chat_id]);
    expect((await me(agent.headers)).json().admin.allowlisted).toBe(false);
  });

  it('401 without a session, 401 for an unknown token, 403 for the API key', async () => {
    expect((await me({})).statusCode).toBe(401);
    const bogus = await me({ cookie: `${SESSION_COOKIE}=production.not-a-real-token` });
    expect(bogus.statusCode).toBe(401);
    expect(bogus.json()).toEqual({ success: false, error: 'Session expired or not valid here: sign in again', code: 'UNAUTHORIZED' });
    const key = await me({ authorization: PRODUCTION_KEY });
    expect(key.statusCode).toBe(403);
    expect(key.json()).toMatchObject({ code: 'SESSION_REQUIRED' });
  });
});

describe('the live agent row', () => {
  it('applies a demotion, a clearance change and a deactivation made through the API on the very next request', async () => {
    const director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
    const person = await signedIn(t, { rank: 'Head Investigator', clearance: 5 });
    expect((await me(person.headers)).json().permissions.delete_docket).toBe(true); // now cached

    const demote = await t.app.inject({
      method: 'PATCH',
      url: `/agents/${person.agent.chat_id}/update`,
      headers: director.headers,
      payload: { agent_rank: 'Agent', clearance_level: 2, reason: 'Demoted after review' },
    });
    expect(demote.statusCode).toBe(200);
    const demoted = (await me(person.headers)).json();
    expect(demoted.permissions).toMatchObject({ delete_docket: false, manage_dockets: true });
    expect(demoted.can_handle_supervisor).toBe(false);
    expect(demoted.agent).toMatchObject({ clearance_level: 2, agent_rank: 'Agent' });

    const suspend = await t.app.inject({
      method: 'PATCH',
      url: `/agents/${person.agent.chat_id}/update`,
      headers: director.headers,
      payload: { status: 'suspended', reason: 'Suspended pending investigation' },
    });
    expect(suspend.statusCode).toBe(200);
    expect((await me(person.headers)).statusCode).toBe(401);
  });

  it('applies changes written behind its back (another instance, the CLI) once their notification arrives', async () => {
    const person = await signedIn(t, { rank: 'Head Investigator', clearance: 5 });
    expect((await me(person.headers)).json().admin.allowlisted).toBe(false); // now cached

    await t.db.production.query('insert into admin_allowlist (chat_id, active) values ($1::text, true)', [person.agent.chat_id]);
    await authNotificationsDelivered(t);
    expect((await me(person.headers)).json().admin.allowlisted).toBe(true);

    await t.db.production.query(`update agents set clearance_level = 1 where chat_id = $1::text`, [person.agent.chat_id]);
    await authNotificationsDelivered(t);
    expect((await me(person.headers)).json().permissions.manage_dockets).toBe(false);

    await t.db.production.query(`update agents set status = 'inactive' where chat_id = $1::text`, [person.agent.chat_id]);
    await authNotificationsDelivered(t);
    expect((await me(person.headers)).statusCode).toBe(401);
  });

  it('refuses an expired session', async () => {
    const person = await signedIn(t);
    expect((await me(person.headers)).statusCode).toBe(200);
    await t.db.production.query(`update sessions set expires_at = now() - interval '1 second' where chat_id = $1::text`, [person.agent.chat_id]);
    await authNotificationsDelivered(t);
    expect((await me(person.headers)).statusCode).toBe(401);
  });

  it.runIf(onPostgres)('across instances: a demotion made on one instance applies on the other (PostgreSQL only)', async () => {
    const other = await createTestApp({
      openDb: {
        production: async () => openPostgres({ connectionString: t.urls.production! }),
      },
    });
    try {
      const director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
      const person = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
      const onOther = () => other.app.inject({ url: '/auth/me', headers: person.headers });
      expect((await onOther()).json().can_handle_supervisor).toBe(true); // cached on the other instance
      const res = await t.app.inject({
        method: 'PATCH',
        url: `/agents/${person.agent.chat_id}/update`,
        headers: director.headers,
        payload: { agent_rank: 'Senior Agent', reason: 'Stepped down' },
      });
      expect(res.statusCode).toBe(200);
      await authNotificationsDelivered(other);
      expect((await onOther()).json().can_handle_supervisor).toBe(false);
    } finally {
      await other.close();
    }
  });
});

describe('environment binding', () => {
  it('a cookie minted in production is not valid in demo, and the other way round', async () => {
    const prod = await signedIn(t, { env: 'production' });
    const demo = await signedIn(t, { env: 'demo' });
    expect((await me(prod.headers)).statusCode).toBe(200);
    expect((await me(demo.headers)).statusCode).toBe(200);
    expect((await me({ ...prod.headers, host: 'demo.localhost' })).statusCode).toBe(401);
    expect((await me({ ...demo.headers, host: 'localhost' })).statusCode).toBe(401);
  });

  it('even a token whose hash exists in the other environment is refused by its prefix', async () => {
    const demo = await signedIn(t, { env: 'demo' });
    const token = demo.cookie.split('=')[1]!;
    // Plant the demo token's hash in production for the same agent id: the prefix still refuses it.
    await t.db.production.query(`insert into agents (chat_id, status, clearance_level) values ($1::text, 'active', 5)`, [demo.agent.chat_id]);
    await t.db.production.query(`insert into sessions (token_hash, chat_id, expires_at) values ($1::text, $2::text, now() + interval '1 hour')`, [
      hashToken(token),
      demo.agent.chat_id,
    ]);
    expect((await me({ ...demo.headers, host: 'localhost' })).statusCode).toBe(401);
  });
});

describe('the Origin check on state-changing session requests', () => {
  it.each([DASHBOARD_ORIGIN, TRAINING_ORIGIN])('accepts %s', async (origin) => {
    const person = await signedIn(t);
    const res = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { ...person.headers, origin } });
    expect(res.statusCode).toBe(200);
  });

  it('refuses a foreign origin with 403 and changes nothing', async () => {
    const person = await signedIn(t);
    const res = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { ...person.headers, origin: 'https://evil.example.com' } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ success: false, error: 'Origin https://evil.example.com may not change data', code: 'ORIGIN_NOT_ALLOWED' });
    expect((await me(person.headers)).statusCode).toBe(200);
  });

  it('lets reads through from any origin (CORS decides what the browser may read)', async () => {
    const person = await signedIn(t);
    const res = await me({ ...person.headers, origin: 'https://evil.example.com' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('POST /auth/logout', () => {
  it('deletes the session row and clears the cookie', async () => {
    const person = await signedIn(t);
    const res = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: person.headers });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    expect(String(res.headers['set-cookie'])).toMatch(new RegExp(`^${SESSION_COOKIE}=; Max-Age=0; Path=/; Expires=`));
    const { rows } = await t.db.production.query('select 1 from sessions where chat_id = $1::text', [person.agent.chat_id]);
    expect(rows).toEqual([]);
    expect((await me(person.headers)).statusCode).toBe(401);
  });

  it('401 without a session', async () => {
    expect((await t.app.inject({ method: 'POST', url: '/auth/logout' })).statusCode).toBe(401);
  });
});
