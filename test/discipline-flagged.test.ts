// Deliveries of punishments that cite a supervisor-flagged report (issue 38): the requeue asks the
// visibility model as the punishment's PATCH and revoke do, and answers from inside its transaction.
// Everything is made through the routes, as the bot and the dashboard make it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let supervisor: Person;
let manager: Person;
beforeAll(async () => {
  t = await createTestApp();
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
  // manage_punishments (clearance 4), below supervisor rank.
  manager = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
});
afterAll(() => t.close());

async function call(method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) {
  return t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
}

/** A punishment of a new person citing a new report (flagged or not), its issue delivery claimed by the bot and failed. */
async function failedDelivery(flagged: boolean): Promise<{ itemId: number; punishmentId: string; reportId: string; userId: string }> {
  const reportId = `FLAGGED-DELIVERY-${chatId()}`;
  const userId = chatId();
  const created = await call('POST', '/reports/create', key, { report_id: reportId, reporter: chatId(), reported: userId, reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: flagged });
  expect(created.statusCode, created.body).toBe(201);
  const issued = await call('POST', '/punishments', supervisor.headers, { user_id: userId, reason: 'Harassment', duration: '7d', report_id: reportId });
  expect(issued.statusCode, issued.body).toBe(201);
  const punishmentId = issued.json().punishment.punishment_id as string;
  // The bot drains the queue up to this punishment's delivery, failing it for good.
  for (;;) {
    const next = await call('GET', '/discipline/next', key);
    expect(next.statusCode, 'the delivery was handed out').toBe(200);
    const item = next.json().item as { item_id: number; punishment_id: string | null };
    const done = await call('POST', `/discipline/${item.item_id}/complete`, key, item.punishment_id === punishmentId ? { result: 'failed', note: 'User not in guild' } : { result: 'success' });
    expect(done.statusCode, done.body).toBe(200);
    if (item.punishment_id === punishmentId) return { itemId: item.item_id, punishmentId, reportId, userId };
  }
}

const state = async (itemId: number) => ({
  item: (await t.db.production.query('select status, attempts from discipline_deliveries where item_id = $1::bigint', [itemId])).rows[0],
  events: (await t.db.production.query(`select type from events where type = 'delivery.requeued' and (data->>'item_id')::bigint = $1::bigint`, [itemId])).rows,
});

describe('POST /discipline/<item_id>/requeue of a delivery citing a flagged report', () => {
  it('is refused below supervisor rank (403 SUPERVISOR_ONLY), as the punishment itself is: nothing written', async () => {
    const { itemId } = await failedDelivery(true);
    const before = await state(itemId);
    expect(before).toEqual({ item: { status: 'failed', attempts: 1 }, events: [] });
    const res = await call('POST', `/discipline/${itemId}/requeue`, manager.headers);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ success: false, code: 'SUPERVISOR_ONLY', error: 'Supervisor reports require supervisor rank' });
    expect(await state(itemId)).toEqual(before);
  });

  it('a supervisor and the key requeue it; a delivery of an unflagged case stays the manager\'s to requeue', async () => {
    const flagged = await failedDelivery(true);
    const bySupervisor = await call('POST', `/discipline/${flagged.itemId}/requeue`, supervisor.headers);
    expect(bySupervisor.statusCode, bySupervisor.body).toBe(200);
    expect(bySupervisor.json().item).toMatchObject({ item_id: flagged.itemId, status: 'pending', attempts: 0, punishment: { punishment_id: flagged.punishmentId, report_id: flagged.reportId } });
    expect(await state(flagged.itemId)).toEqual({ item: { status: 'pending', attempts: 0 }, events: [{ type: 'delivery.requeued' }] });

    const again = await failedDelivery(true);
    expect((await call('POST', `/discipline/${again.itemId}/requeue`, key)).statusCode).toBe(200);

    const plain = await failedDelivery(false);
    const byManager = await call('POST', `/discipline/${plain.itemId}/requeue`, manager.headers);
    expect(byManager.statusCode, byManager.body).toBe(200);
    expect(byManager.json().item).toMatchObject({ item_id: plain.itemId, status: 'pending', punishment: { report_id: plain.reportId } });
  });
});

describe('placeholders of a punishment citing a flagged report carry nothing of the report or its parties', () => {
  it('GET /discipline/pending and GET /punishments below supervisor rank: no report id, no punished chat id; a user_id filter does not match them', async () => {
    const reportId = `FLAGGED-PARTY-${chatId()}`;
    const userId = chatId();
    expect((await call('POST', '/reports/create', key, { report_id: reportId, reporter: chatId(), reported: userId, reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: true })).statusCode).toBe(201);
    const issued = await call('POST', '/punishments', supervisor.headers, { user_id: userId, reason: 'Harassment', duration: '7d', report_id: reportId });
    expect(issued.statusCode, issued.body).toBe(201);
    const punishmentId = issued.json().punishment.punishment_id as string;
    const trainee = await signedIn(t, { rank: 'Agent', status: 'onboarding', clearance: 1 });
    const agent = await signedIn(t, { rank: 'Agent', clearance: 3 });

    for (const viewer of [trainee, agent, manager]) {
      const pending = await call('GET', '/discipline/pending', viewer.headers);
      expect(pending.statusCode).toBe(200);
      const item = (pending.json().items as { punishment_id: string | null }[]).find((i) => i.punishment_id === punishmentId);
      expect(item).toMatchObject({ restricted: true, user_id: null, punishment: { punishment_id: punishmentId, report_id: null, restricted: true } });
      expect(JSON.stringify(item)).not.toContain(userId);
      expect(pending.body).not.toContain(reportId);
    }
    for (const viewer of [agent, manager]) {
      const all = await call('GET', '/punishments', viewer.headers);
      expect(all.statusCode, all.body).toBe(200);
      expect(all.json().punishments).toContainEqual(expect.objectContaining({ punishment_id: punishmentId, report_id: null, restricted: true }));
      expect(all.body).not.toContain(userId);
      expect(all.body).not.toContain(reportId);
      // A placeholder shows no user id, so a filter on one does not find it.
      const filtered = await call('GET', `/punishments?user_id=${userId}`, viewer.headers);
      expect(filtered.statusCode).toBe(200);
      expect(filtered.json()).toMatchObject({ count: 0, punishments: [] });
    }
    // A supervisor sees it whole, found by the filter.
    const whole = await call('GET', `/punishments?user_id=${userId}`, supervisor.headers);
    expect(whole.json().punishments).toEqual([expect.objectContaining({ punishment_id: punishmentId, user_id: userId, report_id: reportId })]);
    const pending = await call('GET', '/discipline/pending', supervisor.headers);
    expect((pending.json().items as { punishment_id: string | null }[]).find((i) => i.punishment_id === punishmentId)).toMatchObject({ user_id: userId, punishment: { report_id: reportId } });
  });
});

describe('a user lookup shows its person below supervisor rank only to the agent who asked for it', () => {
  type Item = { item_id: number; kind: string; user_id: string | null; requested_by: string | null; restricted?: true };
  const lookupOf = async (headers: Record<string, string>, itemId: number) => {
    const res = await call('GET', '/discipline/pending', headers);
    expect(res.statusCode, res.body).toBe(200);
    return { body: res.body, item: (res.json().items as Item[]).find((i) => i.item_id === itemId) };
  };

  it("a supervisor's lookup of a flagged report's party names no one, nor who asked, to others below supervisor rank", async () => {
    const userId = chatId();
    expect((await call('POST', '/reports/create', key, { report_id: `FLAGGED-LOOKUP-${chatId()}`, reporter: chatId(), reported: userId, reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: true })).statusCode).toBe(201);
    const asker = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    const asked = await call('POST', '/discipline/user-lookup', asker.headers, { user_id: userId });
    expect(asked.statusCode, asked.body).toBe(201);
    const itemId = asked.json().lookup.item_id as number;
    const stored = await t.db.production.query(`select user_id, requested_by from discipline_deliveries where item_id = $1::bigint`, [itemId]);
    expect(stored.rows).toEqual([{ user_id: userId, requested_by: asker.agent.chat_id }]);

    const trainee = await signedIn(t, { rank: 'Agent', status: 'onboarding', clearance: 1 });
    const agent = await signedIn(t, { rank: 'Agent', clearance: 3 });
    for (const viewer of [trainee, agent, manager]) {
      const { body, item } = await lookupOf(viewer.headers, itemId);
      expect(item).toEqual(expect.objectContaining({ kind: 'user_lookup', user_id: null, requested_by: null, result_note: null, last_error: null, ref: null, restricted: true, punishment: null }));
      expect(body).not.toContain(userId);
    }
    for (const whole of [supervisor.headers, asker.headers, key]) {
      const { item } = await lookupOf(whole, itemId);
      expect(item).toEqual(expect.objectContaining({ kind: 'user_lookup', user_id: userId, requested_by: asker.agent.chat_id, punishment: null }));
      expect(item).not.toHaveProperty('restricted');
    }
  });

  it("the trail follows: the request's admin audit row and the lookup's events name the person only to its asker below supervisor rank", async () => {
    const userId = chatId();
    const asker = await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true });
    const other = await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true });
    const boss = await signedIn(t, { rank: 'Supervisor', clearance: 4, allowlisted: true });
    const asked = await call('POST', '/discipline/user-lookup', asker.headers, { user_id: userId });
    expect(asked.statusCode, asked.body).toBe(201);
    const itemId = asked.json().lookup.item_id as number;
    // The bot captures the profile: the lookup's completion event.
    for (;;) {
      const next = await call('GET', '/discipline/next', key);
      expect(next.statusCode, 'the lookup was handed out').toBe(200);
      const item = next.json().item as { item_id: number; kind: string; user_id: string };
      const done = item.kind === 'user_lookup'
        ? await call('POST', `/discipline/user-lookup/${item.item_id}/profile`, key, { chat_id: item.user_id, username: `name-${item.user_id}` })
        : await call('POST', `/discipline/${item.item_id}/complete`, key, { result: 'success' });
      expect(done.statusCode, done.body).toBe(200);
      if (item.item_id === itemId) break;
    }
    const stored = await t.db.production.query(
      `select (select target from audit_log where action = 'discipline.user_lookup_requested' and (after ->> 'item_id')::bigint = $1::bigint) as target,
              (select data ->> 'user_id' from events where type = 'delivery.completed' and (data ->> 'item_id')::bigint = $1::bigint) as event_user`,
      [itemId],
    );
    expect(stored.rows).toEqual([{ target: userId, event_user: userId }]);

    const trail = async (who: Person) => {
      const admin = await call('GET', '/admin/audit?action=discipline.user_lookup_requested&limit=200', who.headers);
      const audit = await call('GET', '/audit?event=delivery.completed&limit=500', who.headers);
      expect([admin.statusCode, audit.statusCode]).toEqual([200, 200]);
      const row = (admin.json().rows as { target: string | null; after: { item_id: number } }[]).find((r) => r.after.item_id === itemId);
      const event = (audit.json().events as { data: { item_id?: number; user_id?: string } }[]).find((e) => e.data.item_id === itemId);
      return { target: row?.target, eventUser: event?.data.user_id ?? null, named: admin.body.includes(userId) || audit.body.includes(userId) };
    };
    expect(await trail(other)).toEqual({ target: null, eventUser: null, named: false });
    expect(await trail(asker)).toEqual({ target: userId, eventUser: userId, named: true });
    expect(await trail(boss)).toEqual({ target: userId, eventUser: userId, named: true });
  });

  it('whoever the person is: a lookup of anyone asked by one agent is the same placeholder to another, and whole to its asker', async () => {
    const userId = chatId();
    const asked = await call('POST', '/discipline/user-lookup', manager.headers, { user_id: userId });
    expect(asked.statusCode, asked.body).toBe(201);
    expect(asked.json().lookup).toMatchObject({ user_id: userId, requested_by: manager.agent.chat_id });
    const itemId = asked.json().lookup.item_id as number;
    const other = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
    expect((await lookupOf(other.headers, itemId)).item).toMatchObject({ user_id: null, requested_by: null, restricted: true });
    const own = (await lookupOf(manager.headers, itemId)).item;
    expect(own).toMatchObject({ user_id: userId, requested_by: manager.agent.chat_id });
    expect(own).not.toHaveProperty('restricted');
  });
});
