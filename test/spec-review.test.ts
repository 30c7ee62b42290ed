// What a line-by-line review of the spec found (issue 29, items 2 to 7): delivery events of a
// supervisor report are supervisor events, admin requeue and cancel of the supervisor queue keep
// the Senior Agent rule, an offline player's lookup is all nulls, agent changes through /agents
// write their canonical events, the queue lists are open to every signed-in agent and the key,
// and a refused caller is refused before its body is read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepStale } from '../src/queue/sweep.js';
import { admin } from './helpers/admin.js';
import { createTestApp, DASHBOARD_ORIGIN, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { makeItem } from './helpers/discipline.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { everyTable } from './helpers/tables.js';

type Row = Record<string, any>;
const key = { host: 'localhost', authorization: PRODUCTION_KEY };
const write = (person: Person) => ({ ...person.headers, origin: DASHBOARD_ORIGIN });

let t: TestApp;
const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query<Row>(sql, values)).rows;
let seq = 0;

/** A report through the API (the bot's key), flagged or not. */
async function report(flagged: boolean): Promise<string> {
  const id = `REVIEW-${process.pid}-${++seq}`;
  const res = await t.app.inject({
    method: 'POST', url: '/reports/create', headers: key,
    payload: { report_id: id, reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e', is_supervisor: flagged },
  });
  expect(res.statusCode, res.body).toBe(201);
  return id;
}

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('delivery events of a supervisor report (item 2)', () => {
  it('are listed by GET /audit to supervisors only, whichever path wrote them: completion, failure, requeue, the stale sweep', async () => {
    const flagged = await report(true);
    const agent = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    const completed = await makeItem(t, { reportId: flagged, status: 'processing', attempts: 1, claimedAgo: 1 });
    const failed = await makeItem(t, { reportId: flagged, status: 'processing', attempts: 1, claimedAgo: 1 });
    const swept = await makeItem(t, { reportId: flagged, status: 'processing', attempts: 1, claimedAgo: 3600 });

    const complete = (item: Row, result: string) =>
      t.app.inject({ method: 'POST', url: `/discipline/${item.item_id}/complete`, headers: key, payload: { result, note: 'done' } });
    expect((await complete(completed, 'success')).statusCode).toBe(200);
    expect((await complete(failed, 'failed')).statusCode).toBe(200);
    const requeued = await t.app.inject({ method: 'POST', url: `/discipline/${failed.item_id}/requeue`, headers: key });
    expect(requeued.statusCode, requeued.body).toBe(200);
    await sweepStale(t.db.production, 'discipline_deliveries', { timeoutMs: 60_000, correlationId: 'review-sweep' });

    const written = await q(`select type, data ->> 'item_id' as item, is_supervisor from events where report_id = $1::text and type like 'delivery.%' order by id`, [flagged]);
    expect(written).toEqual([
      { type: 'delivery.completed', item: String(completed.item_id), is_supervisor: true },
      { type: 'delivery.failed', item: String(failed.item_id), is_supervisor: true },
      { type: 'delivery.requeued', item: String(failed.item_id), is_supervisor: true },
      { type: 'delivery.requeued', item: String(swept.item_id), is_supervisor: true },
    ]);

    const audit = async (person: Person) => {
      const res = await t.app.inject({ url: `/audit?report_id=${flagged}&limit=500`, headers: person.headers });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { total: number; events: Row[] };
    };
    expect(await audit(agent)).toMatchObject({ total: 0, events: [] });
    const seen = await audit(supervisor);
    expect(seen.events.filter((e) => e.type.startsWith('delivery.')).map((e) => [e.type, e.is_supervisor])).toEqual([
      ['delivery.requeued', true],
      ['delivery.requeued', true],
      ['delivery.failed', true],
      ['delivery.completed', true],
    ]);
  });
});

describe('admin requeue and cancel of the supervisor queue (item 3)', () => {
  it('need Senior Agent rank, as the bot-facing requeue does; nothing is written on refusal', async () => {
    const flagged = await report(true);
    const insert = async (status: string) =>
      (await q(`insert into report_actions (report_id, kind, queue, status, attempts) values ($1::text, 'validate', 'supervisor', $2::text, 3) returning action_id`, [flagged, status]))[0]!
        .action_id as string;
    const failedAction = await insert('failed');
    const pendingAction = await insert('pending');
    const agentAdmin = await admin(t, { rank: 'Agent', clearance: 4 });
    const seniorAdmin = await admin(t, { rank: 'Senior Agent', clearance: 4 });

    const before = await everyTable(t.db.production);
    for (const [path, id] of [['requeue', failedAction], ['cancel', pendingAction]] as const) {
      const res = await t.app.inject({ method: 'POST', url: `/admin/queue/${id}/${path}`, headers: write(agentAdmin), payload: { reason: 'Bot is back' } });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json()).toEqual({ success: false, error: 'Senior Agent rank required', code: 'RANK_REQUIRED' });
    }
    expect(await everyTable(t.db.production)).toEqual(before);

    const requeued = await t.app.inject({ method: 'POST', url: `/admin/queue/${failedAction}/requeue`, headers: write(seniorAdmin), payload: { reason: 'Bot is back' } });
    expect(requeued.statusCode, requeued.body).toBe(200);
    const cancelled = await t.app.inject({ method: 'POST', url: `/admin/queue/${pendingAction}/cancel`, headers: write(seniorAdmin), payload: { reason: 'Duplicate' } });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(await q('select action_id, status from report_actions where report_id = $1::text order by action_id', [flagged])).toEqual([
      { action_id: failedAction, status: 'pending' },
      { action_id: pendingAction, status: 'cancelled' },
    ]);
  });
});

describe('agent changes through /agents (item 5)', () => {
  it('write agent.created and agent.updated with before and after, beside the audit rows, on both paths of the update', async () => {
    const director = await admin(t, { rank: 'Director', clearance: 5 });
    const id = chatId();
    const created = await t.app.inject({ method: 'POST', url: '/agents/create', headers: write(director), payload: { chat_id: id, name: 'New Hire' } });
    expect(created.statusCode, created.body).toBe(201);
    const byBot = await t.app.inject({ method: 'PATCH', url: `/agents/${id}/update`, headers: key, payload: { security_id: 'SEC-1' } });
    expect(byBot.statusCode, byBot.body).toBe(200);
    const byDashboard = await t.app.inject({ method: 'PATCH', url: `/agents/${id}/update`, headers: write(director), payload: { name: 'Renamed Hire', reason: 'Typo' } });
    expect(byDashboard.statusCode, byDashboard.body).toBe(200);

    const events = await q(
      `select type, actor_kind, actor_chat_id, before, after, data, correlation_id from events where data ->> 'target' = $1::text order by id`,
      [id],
    );
    expect(events.map((e) => [e.type, e.actor_kind, e.actor_chat_id])).toEqual([
      ['agent.created', 'agent', director.agent.chat_id],
      ['agent.updated', 'bot', null],
      ['agent.updated', 'agent', director.agent.chat_id],
    ]);
    expect(events[0]!.before).toBeNull();
    expect(events[0]!.after).toMatchObject({ chat_id: id, name: 'New Hire', status: 'onboarding' });
    expect(events[1]!.before).toMatchObject({ security_id: null });
    expect(events[1]!.after).toMatchObject({ security_id: 'SEC-1' });
    expect(events[2]).toMatchObject({ before: { name: 'New Hire' }, after: { name: 'Renamed Hire' }, data: { target: id, reason: 'Typo' } });
    // Each event shares its operation's correlation id with the admin audit row written beside it.
    const audit = await q(`select action, correlation_id from audit_log where target = $1::text order by id`, [id]);
    expect(audit.map((a) => [a.action, a.correlation_id])).toEqual(events.map((e) => [e.type, e.correlation_id]));
  });

  it('write nothing when the change is refused', async () => {
    const director = await admin(t, { rank: 'Director', clearance: 5 });
    const before = await everyTable(t.db.production);
    const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers: write(director), payload: { chat_id: director.agent.chat_id } });
    expect(res.statusCode).toBe(409);
    expect(await everyTable(t.db.production)).toEqual(before);
  });
});

describe('the queue lists (item 6)', () => {
  it('answer every signed-in agent and the key, the supervisor list Senior Agent rank and up, with flagged content as placeholders', async () => {
    const flagged = await report(true);
    await q(`insert into report_actions (report_id, kind, queue, payload) values ($1::text, 'validate', 'supervisor', '{"secret": "x"}')`, [flagged]);
    const punishment = (await makeItem(t, { reportId: flagged })).punishment_id as string;
    const clearance1 = await signedIn(t, { rank: 'Agent', clearance: 1 });
    const senior1 = await signedIn(t, { rank: 'Senior Agent', clearance: 1 });
    const read = (url: string, headers: Record<string, string>) => t.app.inject({ url, headers });

    for (const headers of [clearance1.headers, key]) {
      expect((await read('/actions/pending/operator', headers)).statusCode).toBe(200);
      expect((await read('/discipline/pending', headers)).statusCode).toBe(200);
    }
    const refused = await read('/actions/pending/supervisor', clearance1.headers);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ success: false, error: 'Senior Agent rank required', code: 'RANK_REQUIRED' });

    const supervisorList = (await read('/actions/pending/supervisor', senior1.headers)).json();
    const action = supervisorList.actions.find((a: Row) => a.report_id === flagged);
    expect(action).toMatchObject({ payload: {}, restricted: true, report: { report_id: flagged, is_supervisor: true, restricted: true } });
    const items = (await read('/discipline/pending', clearance1.headers)).json().items as Row[];
    const item = items.find((i) => i.punishment_id === punishment)!;
    expect(item.punishment).toMatchObject({ punishment_id: punishment, restricted: true });
    expect(JSON.stringify(item)).not.toContain('Spawn killing');
    // The key sees it whole.
    const whole = ((await read('/discipline/pending', key)).json().items as Row[]).find((i) => i.punishment_id === punishment)!;
    expect(whole.punishment).toMatchObject({ punishment_id: punishment, reason: 'Spawn killing' });
  });
});

describe('refusal before validation (item 7)', () => {
  it('a session that may not administer agents gets 403 on PATCH /agents/<id>/update whatever its body', async () => {
    const notAdmin = await signedIn(t, { rank: 'Director', clearance: 5 });
    const target = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const before = await everyTable(t.db.production);
    for (const payload of [{ name: 'No reason given' }, { nonsense: true }, {}]) {
      const res = await t.app.inject({ method: 'PATCH', url: `/agents/${target.agent.chat_id}/update`, headers: write(notAdmin), payload });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json()).toMatchObject({ success: false, code: 'NOT_ADMIN' });
    }
    expect(await everyTable(t.db.production)).toEqual(before);
  });

  it('a non-trainer is refused the trainer routes, and an outsider a session, before the body is read', async () => {
    const agent = await signedIn(t, { rank: 'Agent', clearance: 5 });
    const res = await t.app.inject({ method: 'POST', url: '/training/sessions', headers: write(agent), payload: { nonsense: true } });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json()).toMatchObject({ code: 'TRAINER_REQUIRED' });

    const trainer = await signedIn(t, { rank: 'Agent', clearance: 2, is_trainer: true });
    const trainee = await signedIn(t, { rank: 'Agent', status: 'onboarding', clearance: 1 });
    const started = await t.app.inject({ method: 'POST', url: '/training/sessions', headers: write(trainer), payload: { trainee_id: trainee.agent.chat_id } });
    expect(started.statusCode, started.body).toBe(201);
    const id = started.json().session.id as number;
    const outsider = await signedIn(t, { rank: 'Agent', clearance: 2, is_trainer: true });
    const before = await everyTable(t.db.production);
    const inject = await t.app.inject({ method: 'POST', url: `/training/sessions/${id}/inject`, headers: write(outsider), payload: { type: 'nonsense' } });
    expect(inject.statusCode, inject.body).toBe(403);
    expect(inject.json()).toMatchObject({ code: 'NOT_SESSION_TRAINER' });
    const note = await t.app.inject({ method: 'POST', url: `/training/sessions/${id}/notes`, headers: write(outsider), payload: {} });
    expect(note.statusCode, note.body).toBe(403);
    expect(note.json()).toMatchObject({ code: 'NOT_SESSION_MEMBER' });
    expect(await everyTable(t.db.production)).toEqual(before);
  });
});
