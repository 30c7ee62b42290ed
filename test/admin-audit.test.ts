// The admin audit list (spec: GET /admin/audit): {total, rows}, newest first, filtered by agent,
// action and target in SQL, at most 200 rows, with an index behind each filter.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { admin } from './helpers/admin.js';
import type { Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';
import { DEMO_ADMIN_HISTORY } from '../src/demo/seed-admin.js';
import { DEMO_PERSONAS } from '../src/demo/seed.js';
import { createSession, SESSION_COOKIE } from '../src/platform/auth/sessions.js';

const refusal = (error: string, code: string) => ({ success: false, error, code });

describe('admin audit', () => {
  let t: TestApp;
  let director: Person;
  let other: Person;
  const list = (query = '') => t.app.inject({ method: 'GET', url: `/admin/audit${query}`, headers: director.headers });

  beforeAll(async () => {
    t = await createTestApp();
    director = await admin(t, { name: 'Dana Director' });
    other = await admin(t, { rank: 'Head Investigator', clearance: 4 });
    // Ten rows a second apart: two actors, three actions, two targets.
    for (let i = 0; i < 10; i++) {
      await t.db.production.query(
        `insert into audit_log (actor_kind, actor_chat_id, action, target, reason, before, after, correlation_id, created_at)
         values ('agent', $1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::jsonb, $7::text, now() - make_interval(secs => $8::int))`,
        [i % 2 ? other.agent.chat_id : director.agent.chat_id, ['admin.access_granted', 'admin.queue_requeued', 'admin.report_corrected'][i % 3], i < 5 ? 'T-1' : 'T-2',
          `reason ${i}`, JSON.stringify({ n: i }), JSON.stringify({ n: i + 1 }), `corr-${i}`, 100 - i],
      );
    }
  });
  afterAll(() => t.close());

  it('answers every row newest first with the total, the actor’s name and before/after', async () => {
    const res = await list();
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.total).toBe(10);
    expect(body.rows.map((r: { reason: string }) => r.reason)).toEqual(['reason 9', 'reason 8', 'reason 7', 'reason 6', 'reason 5', 'reason 4', 'reason 3', 'reason 2', 'reason 1', 'reason 0']);
    expect(body.rows[9]).toEqual({
      id: expect.any(Number),
      actor_kind: 'agent',
      actor_chat_id: director.agent.chat_id,
      actor_name: 'Dana Director',
      action: 'admin.access_granted',
      target: 'T-1',
      reason: 'reason 0',
      before: { n: 0 },
      after: { n: 1 },
      correlation_id: 'corr-0',
      created_at: expect.stringMatching(/Z$/),
    });
  });

  it('filters by agent, action and target together, with total and offset', async () => {
    const byAgent = (await list(`?agent=${other.agent.chat_id}`)).json();
    expect(byAgent.total).toBe(5);
    expect(byAgent.rows.every((r: { actor_chat_id: string }) => r.actor_chat_id === other.agent.chat_id)).toBe(true);
    const byAction = (await list('?action=admin.queue_requeued')).json();
    expect(byAction.rows.map((r: { reason: string }) => r.reason)).toEqual(['reason 7', 'reason 4', 'reason 1']);
    const combined = (await list(`?action=admin.access_granted&target=T-2&agent=${other.agent.chat_id}`)).json();
    expect(combined).toMatchObject({ total: 1, rows: [{ reason: 'reason 9' }] });
    const page = (await list('?target=T-1&limit=2&offset=1')).json();
    expect(page.total).toBe(5);
    expect(page.rows.map((r: { reason: string }) => r.reason)).toEqual(['reason 3', 'reason 2']);
  });

  it('treats filters as exact values, never as patterns', async () => {
    expect((await list('?action=admin.%25')).json()).toEqual({ success: true, total: 0, rows: [] });
    expect((await list("?target=T-1'%20or%20'1'='1")).json()).toMatchObject({ total: 0 });
  });

  it('refuses a limit over 200, unknown parameters and a malformed agent id', async () => {
    expect((await list('?limit=201')).json()).toEqual(refusal('querystring.limit must be <= 200', 'VALIDATION_ERROR'));
    expect((await list('?actor=1')).json()).toEqual(refusal('querystring.actor is not an accepted field', 'VALIDATION_ERROR'));
    expect((await list('?agent=abc')).statusCode).toBe(400);
  });

  it('shows the demo organisation’s admin history to its Director', async () => {
    const { token } = await createSession(t.db.demo, 'demo', DEMO_PERSONAS[0].chatId);
    const res = await t.app.inject({ method: 'GET', url: '/admin/audit?limit=200', headers: { host: 'demo.localhost', cookie: `${SESSION_COOKIE}=${token}` } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.total).toBe(DEMO_ADMIN_HISTORY.length);
    expect(body.rows.map((r: { action: string }) => r.action)).toEqual(DEMO_ADMIN_HISTORY.map(([action]) => action).reverse());
    expect(body.rows[0]).toMatchObject({ actor_name: 'Avery Lindqvist', reason: 'Posted twice' });
  });

  it.runIf(onPostgres)('walks an index for each filter (no sequential scan of audit_log)', async () => {
    const db = t.db.production;
    await db.query('analyze audit_log');
    for (const [column, value] of [['actor_chat_id', director.agent.chat_id], ['action', 'admin.queue_requeued'], ['target', 'T-1']]) {
      const plan = await db.transaction(async (tx) => {
        await tx.query('set local enable_seqscan = off');
        const { rows } = await tx.query<{ 'QUERY PLAN': string }>(
          `explain select id from audit_log where ${column} = $1::text order by created_at desc, id desc limit 50`,
          [value],
        );
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      expect(plan, column).toContain(`audit_log_${column === 'actor_chat_id' ? 'actor' : column}_idx`);
      expect(plan, column).not.toContain('Sort');
    }
  });
});
