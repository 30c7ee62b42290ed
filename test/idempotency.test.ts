// Idempotency-Key (issue 41): a retry with the key gets the first answer and changes nothing again;
// the same key with another request is 422, with another principal a key of its own. Every fixture
// through the routes, as the bot and the dashboard send them.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken, SESSION_COOKIE } from '../src/platform/auth/sessions.js';
import { sweepExpiredAnswers } from '../src/platform/http/idempotency.js';
import { admin } from './helpers/admin.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { onPostgres, storeName } from './helpers/stores.js';

type Row = Record<string, any>;
const bot = { authorization: PRODUCTION_KEY };

describe(`Idempotency-Key on ${storeName}`, () => {
  let t: TestApp;
  let manager: Person;
  beforeAll(async () => {
    t = await createTestApp();
    manager = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  });
  afterAll(() => t?.close());

  let n = 0;
  const newReport = () => ({ report_id: `IK-${process.pid}-${++n}`, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' });
  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: object, key?: string) =>
    t.app.inject({ method, url, headers: { ...headers, ...(key === undefined ? {} : { 'idempotency-key': key }) }, ...(payload === undefined ? {} : { payload }) });
  const rows = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Row>(sql, values)).rows;
  const count = async (sql: string, values: unknown[] = []) => (await rows(sql, values))[0]!.n as number;
  /** Sent twice with one key: the second is the first's answer, replayed. */
  async function twice(method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) {
    const key = randomUUID();
    const first = await send(method, url, headers, payload, key);
    const second = await send(method, url, headers, payload, key);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect({ status: second.statusCode, body: second.json(), replayed: second.headers['idempotent-replayed'] }).toEqual({ status: first.statusCode, body: first.json(), replayed: 'true' });
    return { first, key };
  }
  const created = async () => {
    const body = newReport();
    expect((await send('POST', '/reports/create', bot, body)).statusCode).toBe(201);
    return body.report_id;
  };

  it('a create sent twice: one report, one event, the same 201 twice; without the key the second is 409 as before', async () => {
    const body = newReport();
    const { first } = await twice('POST', '/reports/create', bot, body);
    expect(first.statusCode).toBe(201);
    expect(first.json().report.report_id).toBe(body.report_id);
    expect(await count('select count(*)::int as n from reports where report_id = $1', [body.report_id])).toBe(1);
    expect(await count("select count(*)::int as n from events where report_id = $1 and type = 'report.created'", [body.report_id])).toBe(1);
    expect(await count("select count(*)::int as n from report_timeline where report_id = $1", [body.report_id])).toBe(1);
    const again = await send('POST', '/reports/create', bot, body);
    expect({ status: again.statusCode, code: again.json().code }).toEqual({ status: 409, code: 'DUPLICATE' });
  });

  it("the draft's quoted form is the same key as the bare one", async () => {
    const body = newReport();
    const key = randomUUID();
    expect((await send('POST', '/reports/create', bot, body, key)).statusCode).toBe(201);
    const quoted = await send('POST', '/reports/create', bot, body, `"${key}"`);
    expect({ status: quoted.statusCode, replayed: quoted.headers['idempotent-replayed'] }).toEqual({ status: 201, replayed: 'true' });
  });

  it('a note, an action request, a claim and its completion, each sent twice: one change each, the claim hands back the same action', async () => {
    const id = await created();
    await twice('POST', `/reports/${id}/notes`, bot, { note: 'Checked the clip' });
    expect(await count('select count(*)::int as n from report_notes where report_id = $1', [id])).toBe(1);

    const { first: requested } = await twice('POST', `/reports/${id}/action`, bot, { action: 'contact_reporter', reason: 'Ask for the clip' });
    expect(requested.statusCode).toBe(200);
    expect(await count('select count(*)::int as n from report_actions where report_id = $1', [id])).toBe(1);

    await t.app.inject({ method: 'GET', url: '/actions/next', headers: bot }).then(async function drainOthers(res): Promise<void> {
      // Whatever other tests queued is claimed and completed first: the claim below is this report's.
      if (res.statusCode !== 200 || res.json().action.report_id === id) {
        if (res.statusCode === 200) await send('POST', `/actions/${res.json().action.action_id}/complete`, bot, { result: 'failed', note: 'reset' });
        return;
      }
      await send('POST', `/actions/${res.json().action.action_id}/complete`, bot, { result: 'success', note: 'other' });
      return drainOthers(await t.app.inject({ method: 'GET', url: '/actions/next', headers: bot }));
    });
    await send('POST', `/actions/${(await rows('select action_id from report_actions where report_id = $1', [id]))[0]!.action_id}/requeue`, manager.headers);
    const { first: claim } = await twice('GET', '/actions/next', bot);
    expect(claim.statusCode).toBe(200);
    const actionId = claim.json().action.action_id;
    expect(claim.json().action.report_id).toBe(id);
    const [action] = await rows('select status, attempts from report_actions where action_id = $1', [actionId]);
    expect(action).toMatchObject({ status: 'processing' });

    const { first: done } = await twice('POST', `/actions/${actionId}/complete`, bot, { result: 'success', note: 'Reporter contacted' });
    expect(done.statusCode).toBe(200);
    expect(await count("select count(*)::int as n from events where type = 'queue.action_completed' and data->>'action_id' = $1", [String(actionId)])).toBeLessThanOrEqual(1);
    expect((await rows('select status from report_actions where action_id = $1', [actionId]))[0]).toEqual({ status: 'success' });
  });

  it('a punishment sent twice by a Senior Agent: one punishment, one delivery', async () => {
    const id = await created();
    const target = chatId();
    const body = { user_id: target, reason: 'Harassment', report_id: id, duration: '1d' };
    const key = randomUUID();
    const first = await send('POST', '/punishments', manager.headers, body, key);
    expect(first.statusCode).toBe(201);
    const deliveries = await count('select count(*)::int as n from discipline_deliveries where user_id = $1', [target]);
    expect(deliveries).toBeGreaterThan(0);
    const second = await send('POST', '/punishments', manager.headers, body, key);
    expect({ status: second.statusCode, body: second.json(), replayed: second.headers['idempotent-replayed'] }).toEqual({ status: 201, body: first.json(), replayed: 'true' });
    expect(await count('select count(*)::int as n from punishments where user_id = $1', [target])).toBe(1);
    expect(await count('select count(*)::int as n from discipline_deliveries where user_id = $1', [target])).toBe(deliveries);
  });

  it("a replay asks the visibility model again: a punishment whose report was flagged since is refused to a Senior Agent, as a GET is", async () => {
    const id = await created();
    const body = { user_id: chatId(), reason: 'Harassment in voice', duration: '7d', report_id: id };
    const key = randomUUID();
    const first = await send('POST', '/punishments', manager.headers, body, key);
    expect(first.statusCode).toBe(201);
    expect((await send('PATCH', `/reports/${id}/update`, bot, { is_supervisor: true })).statusCode).toBe(200);
    const now = await t.app.inject({ url: `/punishments/${first.json().punishment.punishment_id}`, headers: manager.headers });
    const replay = await send('POST', '/punishments', manager.headers, body, key);
    expect({ status: replay.statusCode, code: replay.json().code, replayed: replay.headers['idempotent-replayed'] }).toEqual({ status: now.statusCode, code: now.json().code, replayed: undefined });
    expect(replay.statusCode).toBe(403);
    expect(replay.body).not.toContain(body.user_id);
  });

  it('a keyed poll that sweeps and then finds nothing (204) keeps its sweep: the stale action past its retries is failed', async () => {
    // An app of its own, whose claims go stale in 0.2 s: the action is claimed three times through
    // the route (the sweep hands it out again each time), and the keyed poll's sweep fails it for good.
    const q = await createTestApp({ env: { QUEUE_STALE_TIMEOUT_SECONDS: '0.2' } });
    try {
      const body = newReport();
      expect((await q.app.inject({ method: 'POST', url: '/reports/create', headers: bot, payload: body })).statusCode).toBe(201);
      expect((await q.app.inject({ method: 'POST', url: `/reports/${body.report_id}/action`, headers: bot, payload: { action: 'contact_reporter', reason: 'Ask' } })).statusCode).toBe(200);
      for (let claim = 1; claim <= 3; claim++) {
        const claimed = await q.app.inject({ url: '/actions/next', headers: bot });
        expect({ claim, status: claimed.statusCode, attempts: claimed.json().action?.attempts }).toEqual({ claim, status: 200, attempts: claim });
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const poll = await q.app.inject({ url: '/actions/next', headers: { ...bot, 'idempotency-key': randomUUID() } });
      expect(poll.statusCode).toBe(204);
      const { rows: actions } = await q.db.production.query('select status from report_actions where report_id = $1', [body.report_id]);
      expect(actions).toEqual([{ status: 'failed' }]);
      const { rows: failed } = await q.db.production.query<{ n: number }>("select count(*)::int as n from events where type = 'queue.action_failed' and report_id = $1", [body.report_id]);
      expect(failed[0]!.n).toBe(1);
    } finally {
      await q.close();
    }
  });

  it('the same key with another request: 422 IDEMPOTENCY_KEY_REUSED, nothing written', async () => {
    const key = randomUUID();
    const first = newReport();
    expect((await send('POST', '/reports/create', bot, first, key)).statusCode).toBe(201);
    const other = newReport();
    const res = await send('POST', '/reports/create', bot, other, key);
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 422,
      body: { success: false, error: 'This Idempotency-Key was used with another request: use a new key for a new request', code: 'IDEMPOTENCY_KEY_REUSED' },
    });
    expect(await count('select count(*)::int as n from reports where report_id = $1', [other.report_id])).toBe(0);
  });

  it("one principal's key is not another's: the same key from an agent runs afresh, neither replayed nor refused", async () => {
    const key = randomUUID();
    const fromBot = newReport();
    expect((await send('POST', '/reports/create', bot, fromBot, key)).statusCode).toBe(201);
    const fromAgent = newReport();
    const agent = await send('POST', '/reports/create', manager.headers, fromAgent, key);
    expect(agent.statusCode).toBe(201);
    expect(agent.headers['idempotent-replayed']).toBeUndefined();
    expect(agent.json().report.report_id).toBe(fromAgent.report_id);
    expect(await count('select count(*)::int as n from reports where report_id in ($1, $2)', [fromBot.report_id, fromAgent.report_id])).toBe(2);
    expect(await rows('select scope from idempotency_keys where key = $1 order by scope', [key])).toEqual([{ scope: `agent:${manager.agent.chat_id}` }, { scope: "key" }]);
  });

  it('an erasure of a person deletes the kept answers that name them (a retry afterwards runs afresh), and leaves the others', async () => {
    const person = chatId();
    const theirs = { ...newReport(), reporter: person };
    const keyOfTheirs = randomUUID();
    expect((await send('POST', '/reports/create', bot, theirs, keyOfTheirs)).statusCode).toBe(201);
    const someoneElse = newReport();
    const keyOfOther = randomUUID();
    expect((await send('POST', '/reports/create', bot, someoneElse, keyOfOther)).statusCode).toBe(201);
    const director = await admin(t);
    const erased = await t.app.inject({ method: 'POST', url: `/admin/subjects/${person}/erase`, headers: director.headers, payload: { reason: 'Deletion request', reference: `GDPR-IK-${process.pid}-${++n}` } });
    expect(erased.statusCode, erased.body).toBe(200);
    expect(erased.json().counts).toMatchObject({ idempotency_keys: 1 });
    expect(await rows('select key from idempotency_keys where key in ($1, $2)', [keyOfTheirs, keyOfOther])).toEqual([{ key: keyOfOther }]);
    expect(await count("select count(*)::int as n from idempotency_keys where strpos(body, $1) > 0", [person])).toBe(0);
    // The retry runs afresh: the report exists (pseudonymised), so 409 as without a key.
    const retry = await send('POST', '/reports/create', bot, theirs, keyOfTheirs);
    expect({ status: retry.statusCode, code: retry.json().code, replayed: retry.headers['idempotent-replayed'] }).toEqual({ status: 409, code: 'DUPLICATE', replayed: undefined });
  });

  it("a person's access export lists the answers kept that name them, without the staff member who asked", async () => {
    const person = chatId();
    const filed = { ...newReport(), reporter: person };
    expect((await send('POST', '/reports/create', manager.headers, filed, randomUUID())).statusCode).toBe(201);
    const director = await admin(t);
    const exported = await t.app.inject({ url: `/admin/subjects/${person}`, headers: director.headers });
    expect(exported.statusCode, exported.body).toBe(200);
    const kept = exported.json().kinds.stored_answers as { row: Row }[];
    expect(kept).toHaveLength(1);
    expect(kept[0]!.row).toMatchObject({ scope: '[withheld]', status: 201 });
    expect(JSON.stringify(exported.json().kinds)).not.toContain(manager.agent.chat_id);
    expect(exported.json().withheld.kinds.stored_answers).toEqual({ staff: 1 });
    // The bot's own requests are the bot's: shown as they are.
    const byBot = { ...newReport(), reporter: person };
    expect((await send('POST', '/reports/create', bot, byBot, randomUUID())).statusCode).toBe(201);
    const again = (await t.app.inject({ url: `/admin/subjects/${person}`, headers: director.headers })).json();
    expect((again.kinds.stored_answers as { row: Row }[]).map((r) => r.row.scope).sort()).toEqual(['[withheld]', 'key']);
  });

  it('every state-changing operation declares the header in the OpenAPI document, and no other does', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    for (const [path, operations] of Object.entries<Record<string, Row>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const declares = (operation.parameters ?? []).some((p: Row) => p.in === 'header' && p.name === 'idempotency-key');
        // A timestamp conversion is a POST that changes nothing.
        const changes = (method !== 'get' && path !== '/util/timestamp') || ['/actions/next', '/actions/next/operator', '/actions/next/supervisor', '/discipline/next'].includes(path);
        expect([method, path, declares]).toEqual([method, path, changes]);
        if (changes) expect([method, path, Object.keys(operation.responses).filter((s) => s === '409' || s === '422')]).toEqual([method, path, ['409', '422']]);
      }
    }
  });

  it('an answer kept past IDEMPOTENCY_KEY_TTL_HOURS is not replayed (the key runs afresh), and the sweep deletes it', async () => {
    const id = await created();
    const key = randomUUID();
    expect((await send('POST', `/reports/${id}/notes`, bot, { note: 'Old' }, key)).statusCode).toBe(201);
    await t.db.production.query("update idempotency_keys set created_at = now() - interval '25 hours' where key = $1", [key]);
    const again = await send('POST', `/reports/${id}/notes`, bot, { note: 'Old' }, key);
    expect({ status: again.statusCode, replayed: again.headers['idempotent-replayed'] }).toEqual({ status: 201, replayed: undefined });
    expect(await count('select count(*)::int as n from report_notes where report_id = $1', [id])).toBe(2);
    await t.db.production.query("update idempotency_keys set created_at = now() - interval '25 hours' where key = $1", [key]);
    expect(await sweepExpiredAnswers(t.db.production, 24)).toBeGreaterThanOrEqual(1);
    expect(await rows('select 1 from idempotency_keys where key = $1', [key])).toEqual([]);
  });

  it('a key that is too long or empty is 400 naming the header, and nothing is written', async () => {
    for (const key of ['x'.repeat(256), '""', '']) {
      const body = newReport();
      const res = await send('POST', '/reports/create', bot, body, key);
      expect({ status: res.statusCode, code: res.json().code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
      expect(res.json().error).toMatch(key === '' ? /^headers\.idempotency-key must NOT have fewer than 1 characters$/ : /^Idempotency-Key must be 1 to 255 visible characters, bare or in double quotes$/);
      expect(await count('select count(*)::int as n from reports where report_id = $1', [body.report_id])).toBe(0);
    }
  });

  it('an answer that changed nothing is not kept: a retry asks again (404 before the report exists, 201 after), an empty claim too', async () => {
    const key = randomUUID();
    const id = `IK-LATE-${process.pid}-${++n}`;
    const early = await send('POST', `/reports/${id}/notes`, bot, { note: 'x' }, key);
    expect({ status: early.statusCode, replayed: early.headers['idempotent-replayed'] }).toEqual({ status: 404, replayed: undefined });
    expect(await rows('select 1 from idempotency_keys where key = $1', [key])).toEqual([]);
    expect((await send('POST', '/reports/create', bot, { ...newReport(), report_id: id })).statusCode).toBe(201);
    const retry = await send('POST', `/reports/${id}/notes`, bot, { note: 'x' }, key);
    expect({ status: retry.statusCode, replayed: retry.headers['idempotent-replayed'] }).toEqual({ status: 201, replayed: undefined });
    expect(await count('select count(*)::int as n from report_notes where report_id = $1', [id])).toBe(1);
    expect(await rows('select status from idempotency_keys where key = $1', [key])).toEqual([{ status: 201 }]);
  });

  it('two Idempotency-Key headers are 400, not one key of both', async () => {
    const body = newReport();
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...bot, 'idempotency-key': ['a', 'b'] as unknown as string }, payload: body });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 400, body: { success: false, error: 'Idempotency-Key must be sent once', code: 'VALIDATION_ERROR' } });
    expect(await count('select count(*)::int as n from reports where report_id = $1', [body.report_id])).toBe(0);
  });
});

describe.runIf(onPostgres)('Idempotency-Key: two requests with one key at once (PostgreSQL)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('the second is 409 IDEMPOTENCY_KEY_IN_USE with Retry-After while the first runs; exactly one runs; the retry after it is the first answer', async () => {
    const body = { report_id: `IK-PAR-${process.pid}`, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' };
    const key = randomUUID();
    const headers = { ...bot, 'idempotency-key': key };
    // An operator's transaction holds the table: the first request waits inside its own, key held.
    const holder = new pg.Client({ connectionString: t.urls.production });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table reports in share mode');
      const first = t.app.inject({ method: 'POST', url: '/reports/create', headers, payload: body });
      // Its insert waits on the table: it holds the key's lock by then. (Asked outside the
      // holder's transaction, whose view of pg_stat_activity is the one it first took.)
      const running = async () => (await t.db.production.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and position('insert into reports' in query) > 0")).rows[0]!.n > 0;
      while (!(await running())) await new Promise((resolve) => setTimeout(resolve, 20));
      const second = await t.app.inject({ method: 'POST', url: '/reports/create', headers, payload: body });
      expect({ status: second.statusCode, retryAfter: second.headers['retry-after'], body: second.json() }).toEqual({
        status: 409,
        retryAfter: '1',
        body: { success: false, error: 'A request with this Idempotency-Key is still running: retry it in a moment', code: 'IDEMPOTENCY_KEY_IN_USE' },
      });
      await holder.query('commit');
      const answered = await first;
      expect(answered.statusCode).toBe(201);
      const retry = await t.app.inject({ method: 'POST', url: '/reports/create', headers, payload: body });
      expect({ status: retry.statusCode, body: retry.json(), replayed: retry.headers['idempotent-replayed'] }).toEqual({ status: 201, body: answered.json(), replayed: 'true' });
      const { rows } = await t.db.production.query<{ n: number }>("select count(*)::int as n from events where report_id = $1 and type = 'report.created'", [body.report_id]);
      expect(rows[0]!.n).toBe(1);
    } finally {
      await holder.end();
    }
  });
});

describe.runIf(onPostgres)('Idempotency-Key: work after the commit waits for the request\'s commit (PostgreSQL)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it("a keyed suspension clears this instance's session cache after its commit: the agent's request in between does not keep them in", async () => {
    const agent = await signedIn(t, { rank: 'Agent', clearance: 3 });
    const tokenHash = hashToken(agent.cookie.slice(SESSION_COOKIE.length + 1));
    const sessions = t.environments.get('production')!.sessions;
    expect((await t.app.inject({ url: '/agents', headers: agent.headers })).statusCode).toBe(200);
    const holder = new pg.Client({ connectionString: t.urls.production });
    await holder.connect();
    try {
      // Holds the keyed request after its handler (the cache cleared, before) and before its commit.
      await holder.query('begin');
      await holder.query('lock table idempotency_keys in share mode');
      const suspension = t.app.inject({ method: 'PATCH', url: `/agents/${agent.agent.chat_id}/update`, headers: { ...bot, 'idempotency-key': randomUUID() }, payload: { status: 'suspended', reason: 'Suspended pending review' } });
      const waiting = async () => (await t.db.production.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()")).rows[0]!.n > 0;
      while (!(await waiting())) await new Promise((resolve) => setTimeout(resolve, 10));
      // The agent's own request meanwhile: it reads (and caches) the row as committed, still active.
      expect((await t.app.inject({ url: '/agents', headers: agent.headers })).statusCode).toBe(200);
      await holder.query('commit');
      expect((await suspension).statusCode).toBe(200);
      expect(sessions.get(tokenHash)).toBeUndefined();
      expect((await t.app.inject({ url: '/agents', headers: agent.headers })).statusCode).toBe(401);
    } finally {
      await holder.end();
    }
  });
});
