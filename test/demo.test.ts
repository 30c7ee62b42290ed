// The demo organisation (seedDemo, seedDemoIfEmpty) and POST /demo/reset: demo only, session only,
// everything back to the seed in one transaction, callers' sessions kept, readers never blocked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAgent } from '../src/agents/queries.js';
import { DEMO_ADMIN_HISTORY } from '../src/demo/seed-admin.js';
import { DEMO_ALLOWLIST, DEMO_PERSONAS, PRESERVED_TABLES, RESET_TABLES, resetDemo, seedDemo, seedDemoIfEmpty } from '../src/demo/seed.js';
import type { Db } from '../src/platform/db/types.js';
import { createSession, hashToken } from '../src/platform/auth/sessions.js';
import { ID_FORMATS, patternRegExp } from '../src/platform/ids.js';
import { createTestApp, DEMO_KEY, type TestApp } from './helpers/app.js';
import { onPostgres, storeName } from './helpers/stores.js';

const DEMO_HOST = 'demo.localhost';
const [DIRECTOR, SUPERVISOR, AGENT, TRAINEE] = DEMO_PERSONAS.map((p) => p.chatId) as [string, string, string, string];
const EXTRA = '555000111222333444';

let t: TestApp;
let demo: Db;
beforeAll(async () => {
  t = await createTestApp();
  demo = t.db.demo;
});
afterAll(() => t.close());

const agentsSql = `select chat_id, name, status, agent_rank, security_id, agreement_id, agent_id, clearance_id, clearance_level,
  is_trainer from agents order by chat_id`;
const allowlistSql = 'select chat_id, active from admin_allowlist order by chat_id';
const count = async (db: Db, table: string) => (await db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;
const reset = (headers: Record<string, string>) => t.app.inject({ method: 'POST', url: '/demo/reset', headers });

describe(`the demo seed on ${storeName}`, () => {
  it('seedDemoIfEmpty seeds an empty database once, then leaves it alone', async () => {
    await demo.exec('delete from admin_allowlist; delete from agents;'); // in case start-up seeded it already
    expect(await seedDemoIfEmpty(demo)).toBe(true);
    const agents = await demo.query(agentsSql);
    await demo.query(`update agents set name = 'Renamed' where chat_id = $1::text`, [AGENT]);
    expect(await seedDemoIfEmpty(demo)).toBe(false);
    expect((await demo.query<{ name: string }>('select name from agents where chat_id = $1::text', [AGENT])).rows[0]!.name).toBe('Renamed');
    expect(await count(demo, 'agents')).toBe(agents.rowCount);
    await demo.transaction(seedDemo); // seeding again is an upsert: back to the seeded values
    expect((await demo.query(agentsSql)).rows).toEqual(agents.rows);
  });

  it('is a whole organisation: every rank and clearance, trainees, trainers, suspended and inactive staff', async () => {
    const { rows } = await demo.query<Record<string, string | number | boolean | null>>(agentsSql);
    expect(rows.length).toBeGreaterThanOrEqual(12);
    const byRank: Record<string, number> = {};
    for (const r of rows) byRank[String(r.agent_rank)] = (byRank[String(r.agent_rank)] ?? 0) + 1;
    expect(byRank).toEqual({
      Agent: 6, 'Senior Agent': 2, Supervisor: 2, 'Head Investigator': 2, Director: 1,
    });
    expect([...new Set(rows.map((r) => r.clearance_level))].sort()).toEqual([1, 2, 3, 4, 5]);
    for (const r of rows) expect(r.chat_id).toMatch(/^\d{18}$/);
    expect(rows.filter((r) => r.status === 'suspended')).toHaveLength(1);
    expect(rows.filter((r) => r.status === 'inactive')).toHaveLength(1);
    expect(rows.filter((r) => r.is_trainer).length).toBeGreaterThanOrEqual(3);

    const trainees = rows.filter((r) => r.status === 'onboarding');
    expect(trainees.length).toBeGreaterThanOrEqual(2);
    for (const r of trainees) {
      expect(r).toMatchObject({ clearance_level: 1, security_id: null, agreement_id: null, agent_id: null, clearance_id: null });
    }
    for (const r of rows.filter((r) => r.status !== 'onboarding')) {
      expect(r.agreement_id).toMatch(patternRegExp(ID_FORMATS.agreement));
      expect(r.agent_id).toMatch(patternRegExp(ID_FORMATS.agent));
      expect(r.clearance_id).toMatch(patternRegExp(ID_FORMATS.clearance));
      expect(r.security_id).toMatch(/^\S{1,16}$/);
    }
    const unique = (field: string) => new Set(rows.map((r) => r[field]).filter((v) => v !== null)).size;
    expect(unique('agreement_id')).toBe(rows.length - trainees.length);
    expect(unique('agent_id')).toBe(rows.length - trainees.length);
  });

  it('has the four personas sign-in maps onto, the admins on the allowlist', async () => {
    const persona = async (chatId: string) => (await demo.query(`${agentsSql.replace('order by', 'where chat_id = $1::text order by')}`, [chatId])).rows[0];
    expect(await persona(DIRECTOR)).toMatchObject({ agent_rank: 'Director', clearance_level: 5, status: 'active' });
    expect(await persona(SUPERVISOR)).toMatchObject({ agent_rank: 'Supervisor', clearance_level: 4, status: 'active', is_trainer: true });
    expect(await persona(AGENT)).toMatchObject({ agent_rank: 'Agent', clearance_level: 2, status: 'active', is_trainer: true });
    expect(await persona(TRAINEE)).toMatchObject({ clearance_level: 1, status: 'onboarding', agent_id: null });
    for (const p of DEMO_PERSONAS) expect((await persona(p.chatId))!.name).toBe(p.name);

    const allowlist = (await demo.query<{ chat_id: string; active: boolean }>(allowlistSql)).rows;
    expect(allowlist).toEqual([...DEMO_ALLOWLIST].sort((a, b) => a.chat_id.localeCompare(b.chat_id)));
    expect(allowlist.filter((e) => e.active).map((e) => e.chat_id)).toEqual(expect.arrayContaining([DIRECTOR, SUPERVISOR]));
    expect(allowlist.some((e) => !e.active)).toBe(true);
  });

  it('a reset clears every data table, children before parents', async () => {
    const { rows: tables } = await demo.query<{ name: string }>(
      `select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`,
    );
    const cleared = RESET_TABLES.map((entry) => entry.table);
    expect(tables.map((r) => r.name).filter((name) => !PRESERVED_TABLES.includes(name)).sort()).toEqual([...cleared].sort());
    const { rows: fks } = await demo.query<{ child: string; parent: string }>(
      `select conrelid::regclass::text as child, confrelid::regclass::text as parent from pg_constraint
       where contype = 'f' and connamespace = current_schema()::regnamespace`,
    );
    for (const { child, parent } of fks.filter((fk) => cleared.includes(fk.child) && cleared.includes(fk.parent) && fk.child !== fk.parent)) {
      expect(cleared.indexOf(child), `${child} before ${parent}`).toBeLessThan(cleared.indexOf(parent));
    }
  });
});

describe(`the demo reports on ${storeName}`, () => {
  it('cover every display status, with notes, evidence, timelines, profiles, and an open and a closed contact thread', async () => {
    await demo.transaction(seedDemo);
    const statuses = (await demo.query<{ status: string }>('select distinct status from reports order by status')).rows.map((r) => r.status);
    expect(statuses).toEqual(['Appealed', 'Invalidated', 'Open', 'Pending', 'Under Investigation', 'Validated']);
    expect(await count(demo, 'report_notes')).toBeGreaterThan(0);
    expect(await count(demo, 'report_evidence')).toBeGreaterThan(0);
    expect((await demo.query(`select 1 from reports where is_supervisor`)).rowCount).toBeGreaterThan(0);
    const created = await demo.query(`select report_id from report_timeline where event = 'Report created'`);
    expect(created.rowCount).toBe(await count(demo, 'reports'));
    const threads = (await demo.query<{ closed: boolean; n: number }>(
      `select t.closed, count(m.id)::int as n from contact_threads t join contact_messages m using (report_id) group by t.report_id, t.closed order by t.closed`,
    )).rows;
    expect(threads.map((r) => r.closed)).toEqual([false, true]);
    expect(threads.every((r) => r.n > 0)).toBe(true);
    const urls = (await demo.query<{ url: string }>('select url from report_evidence')).rows;
    expect(urls.every((r) => /^https:\/\//.test(r.url))).toBe(true);
    // Reports assigned to the personas give a signed-in visitor cases to act on.
    expect((await demo.query(`select 1 from reports where assigned_agent = $1::text and status = 'Under Investigation'`, [AGENT])).rowCount).toBe(1);
    // Seeding again restores them rather than failing on duplicates.
    await demo.query(`update reports set status = 'Open' where status = 'Validated'`);
    await demo.transaction(seedDemo);
    expect((await demo.query(`select 1 from reports where status = 'Validated'`)).rowCount).toBe(1);
  });
});

describe(`the demo punishments and bot queues on ${storeName}`, () => {
  const distinct = async (sql: string) => (await demo.query<{ v: string }>(sql)).rows.map((r) => r.v);

  it('cover every punishment status and every queue state and kind, and seed again to the same rows', async () => {
    await demo.transaction(seedDemo);
    expect(await distinct('select distinct status as v from punishments order by 1')).toEqual(['Active', 'Appealed', 'Expired', 'Revoked']);
    expect(await distinct('select distinct status as v from discipline_deliveries order by 1')).toEqual(['cancelled', 'failed', 'pending', 'processing', 'success']);
    expect(await distinct('select distinct kind as v from discipline_deliveries order by 1')).toEqual(['expire', 'issue', 'revoke', 'user_lookup']);
    expect(await distinct('select distinct status as v from report_actions order by 1')).toEqual(['cancelled', 'failed', 'pending', 'processing', 'success']);
    expect(await distinct('select distinct queue as v from report_actions order by 1')).toEqual(['operator', 'supervisor']);
    // A paced retry waits; the punishment whose user has no profile has a lookup waiting.
    expect(await distinct(`select punishment_id as v from discipline_deliveries where status = 'pending' and available_at > now()`)).toEqual(['NO1WL5']);
    expect(await distinct(`select d.user_id as v from discipline_deliveries d where kind = 'user_lookup' and not exists (select 1 from chat_profiles c where c.chat_id = d.user_id)`)).toEqual(['887766554433221100']);
    // Nothing seeded is due for expiry: the expired one already is, the others expire in the future.
    expect(await distinct(`select punishment_id as v from punishments where status in ('Active', 'Appealed') and expires_at <= now()`)).toEqual([]);
    const snapshot = 'select punishment_id, status, (select count(*)::int from discipline_deliveries d where d.punishment_id = p.punishment_id) as n from punishments p order by 1';
    const before = (await demo.query(snapshot)).rows;
    await demo.transaction(seedDemo);
    expect((await demo.query(snapshot)).rows).toEqual(before);
    expect(await count(demo, 'report_actions')).toBe(7);
    expect((await demo.query(`select 1 from discipline_deliveries where kind = 'user_lookup'`)).rowCount).toBe(1);
  });
});

describe('POST /demo/reset', () => {
  let token: string;
  let seededAgents: unknown[];
  let seededAllowlist: unknown[];
  const seededAudit = DEMO_ADMIN_HISTORY.length;
  const kept = async () => (await demo.query<{ n: number }>("select count(*)::int as n from audit_log where action = 'keep.me'")).rows[0]!.n;
  beforeAll(async () => {
    token = (await createSession(demo, 'demo', DIRECTOR)).token;
    seededAgents = (await demo.query(agentsSql)).rows;
    seededAllowlist = (await demo.query(allowlistSql)).rows;
  });

  it('puts every row back, drops what was added, and keeps the seeded agents\' sessions', async () => {
    const other = await createSession(demo, 'demo', AGENT);
    await demo.query(`update agents set name = 'Changed', clearance_level = 1, is_trainer = false where chat_id = $1::text`, [SUPERVISOR]);
    await demo.query('delete from agents where chat_id = $1::text', [TRAINEE]);
    await demo.query('delete from admin_allowlist where chat_id = $1::text', [SUPERVISOR]);
    await insertAgent(demo, { chat_id: EXTRA, name: 'Added Later', status: 'active', clearance_level: 3 });
    const extraSession = await createSession(demo, 'demo', EXTRA);
    await demo.query(`insert into admin_allowlist (chat_id) values ($1::text)`, [EXTRA]);
    await demo.query(`insert into audit_log (actor_kind, action, target, correlation_id) values ('system', 'test.change', 'x', 'c-1')`);
    await demo.query(`insert into events (type, actor_kind, correlation_id) values ('report.created', 'system', 'c-2')`);

    const res = await reset({ host: DEMO_HOST, cookie: `cms_session=${token}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });

    expect((await demo.query(agentsSql)).rows).toEqual(seededAgents);
    expect((await demo.query(allowlistSql)).rows).toEqual(seededAllowlist);
    // What the test wrote is gone; what remains is the seeded admin history (an event per audit row).
    expect((await demo.query("select count(*)::int as n from audit_log where correlation_id = 'c-1'")).rows[0]).toEqual({ n: 0 });
    expect((await demo.query("select count(*)::int as n from events where correlation_id = 'c-2'")).rows[0]).toEqual({ n: 0 });
    expect(await count(demo, 'audit_log')).toBe(seededAudit);
    expect(await count(demo, 'events')).toBe(seededAudit);
    const sessionOf = async (t: string) => (await demo.query('select chat_id from sessions where token_hash = $1::text', [hashToken(t)])).rows;
    expect(await sessionOf(token)).toEqual([{ chat_id: DIRECTOR }]);
    expect(await sessionOf(other.token)).toEqual([{ chat_id: AGENT }]);
    expect(await sessionOf(extraSession.token)).toEqual([]);

    // The caller is still signed in: the same cookie resets again.
    const again = await reset({ host: DEMO_HOST, cookie: `cms_session=${token}` });
    expect(again.statusCode).toBe(200);
    expect((await demo.query(agentsSql)).rows).toEqual(seededAgents);
  });

  it('outside the demo environment: 403 DEMO_ONLY, and nothing is deleted anywhere', async () => {
    const production = t.db.production;
    await insertAgent(production, { chat_id: DIRECTOR, name: 'Real Director', status: 'active', agent_rank: 'Director', clearance_level: 5 });
    await production.query(`insert into audit_log (actor_kind, action, correlation_id) values ('system', 'keep.me', 'c-3')`);
    await demo.query(`insert into audit_log (actor_kind, action, correlation_id) values ('system', 'keep.me', 'c-4')`);
    const session = await createSession(production, 'production', DIRECTOR);

    const res = await reset({ host: 'localhost', cookie: `cms_session=${session.token}` });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ success: false, error: 'Demo reset is only available in the demo environment', code: 'DEMO_ONLY' });
    expect(await count(production, 'agents')).toBe(1);
    expect(await count(production, 'audit_log')).toBe(1);
    expect(await count(production, 'sessions')).toBe(1);
    expect(await kept()).toBe(1);
  });

  it('the API key: 403; no credential or a production cookie on the demo host: 401; nothing deleted', async () => {
    const key = await reset({ host: DEMO_HOST, authorization: DEMO_KEY });
    expect(key.statusCode).toBe(403);
    expect(key.json()).toMatchObject({ success: false, code: 'SESSION_REQUIRED' });
    const none = await reset({ host: DEMO_HOST });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' });
    const foreign = await createSession(t.db.production, 'production', DIRECTOR);
    expect((await reset({ host: DEMO_HOST, cookie: `cms_session=${foreign.token}` })).statusCode).toBe(401);
    expect(await kept()).toBe(1);
  });

  it('readers keep being answered while a reset runs, and see the old or the new data, never a half-done reset', async () => {
    await insertAgent(demo, { chat_id: EXTRA, name: 'Added Later' });
    const before = await count(demo, 'agents');
    const resetting = reset({ host: DEMO_HOST, cookie: `cms_session=${token}` });
    const reads = Array.from({ length: 20 }, (_, i) =>
      new Promise((resolve) => setTimeout(resolve, i * 5)).then(() => count(demo, 'agents')));
    const counts = await Promise.all(reads);
    expect((await resetting).statusCode).toBe(200);
    for (const n of counts) expect([before, seededAgents.length]).toContain(n);
    expect(await count(demo, 'agents')).toBe(seededAgents.length);
  });
});

describe.runIf(onPostgres)('a reset does not lock readers out (PostgreSQL only)', () => {
  it('reads are answered, with the old rows, while the reset transaction is still open', async () => {
    await insertAgent(demo, { chat_id: EXTRA, name: 'Added Later' });
    const before = await count(demo, 'agents');
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Queued outside the transaction's scope, released from inside it once every row is deleted.
    const reads = Array.from({ length: 4 }, () => gate.then(() => count(demo, 'agents')));
    const during = await demo.transaction(async (tx) => {
      await resetDemo(tx);
      open();
      const timeout = new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 5000));
      return Promise.race([Promise.all(reads), timeout]);
    });
    expect(during).toEqual([before, before, before, before]);
    expect(await count(demo, 'agents')).toBe(before - 1);
  });
});
