// The adversarial review of issue 38's change: places where a caller below supervisor rank still
// learned something of a supervisor-flagged report (its person, its texts, its issuer) or could ask
// an oracle. Each `it` is one finding; each failed before its fix, on both stores. Everything is
// made through the routes, as the bot (its key) and the dashboards (sessions) make it. The expiry
// of finding A is in punishment-deleted-flagged.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let supervisor: Person;
/** Senior Agent, clearance 4, on the admin allowlist: decide_appeal, manage_punishments, admin_audit; below supervisor rank. */
let senior: Person;
beforeAll(async () => {
  t = await createTestApp();
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4, allowlisted: true });
  senior = await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true });
}, 60_000);
afterAll(() => t.close());

const call = (method: 'GET' | 'POST' | 'DELETE' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) =>
  t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

async function flaggedReport(prefix: string, reported: string, reporter = chatId()): Promise<string> {
  const reportId = `${prefix}-${chatId()}`;
  const created = await call('POST', '/reports/create', key, {
    report_id: reportId, reporter, reported, reason: 'SECRET-REASON about a staff member', notes: 'SECRET-NOTES', evidence: 'e', is_supervisor: true,
  });
  expect(created.statusCode, created.body).toBe(201);
  return reportId;
}

/** The bot drains the discipline queue, answering each item with `answer` (by item), until `until` is handed out. */
async function drainUntil(until: (item: { item_id: number; kind: string; punishment_id: string | null; user_id: string }) => boolean, answer: (item: { item_id: number; kind: string; user_id: string }) => Promise<void>) {
  for (;;) {
    const next = await call('GET', '/discipline/next', key);
    expect(next.statusCode, 'the item was handed out').toBe(200);
    const item = next.json().item;
    await answer(item);
    if (until(item)) return item;
  }
}

const completeDelivery = async (item: { item_id: number; kind: string; user_id: string }, note = 'ok') => {
  const done = item.kind === 'user_lookup'
    ? await call('POST', `/discipline/user-lookup/${item.item_id}/profile`, key, { chat_id: item.user_id, username: `SECRET-USERNAME-${item.user_id}`, global_name: 'SECRET-GLOBAL' })
    : await call('POST', `/discipline/${item.item_id}/complete`, key, { result: 'success', note, ref: 'SECRET-REF' });
  expect(done.statusCode, done.body).toBe(200);
};

describe('finding A: a punishment citing a report deleted while flagged writes its later events unhidden', () => {
  it('its revoke, and the bot completing the revoke delivery, are readable below supervisor rank in GET /audit and GET /admin/audit (person, reason, bot note)', async () => {
    const userId = chatId();
    const reportId = await flaggedReport('DELFLAG', userId);
    const issued = await call('POST', '/punishments', supervisor.headers, { user_id: userId, reason: 'SECRET-PUNISHMENT-REASON', duration: '7d', report_id: reportId });
    expect(issued.statusCode, issued.body).toBe(201);
    const punishmentId = issued.json().punishment.punishment_id as string;
    // The bot deletes the flagged case; the punishment stands, citing the deleted (flagged) report.
    const deleted = await call('DELETE', `/reports/${reportId}`, key, { reason: 'duplicate' });
    expect(deleted.statusCode, deleted.body).toBe(200);
    // Below supervisor rank the punishment is still hidden: the model holds there.
    expect((await call('GET', `/punishments/${punishmentId}`, senior.headers)).statusCode).toBe(403);

    const revoked = await call('POST', `/punishments/${punishmentId}/revoke`, supervisor.headers, { reason: 'SECRET-REVOKE-REASON' });
    expect(revoked.statusCode, revoked.body).toBe(200);
    await drainUntil((i) => i.punishment_id === punishmentId && i.kind === 'revoke', (i) => completeDelivery(i, 'SECRET-BOT-NOTE delivered to the member'));

    const audit = await call('GET', `/audit?search=${punishmentId}&limit=500`, senior.headers);
    expect(audit.statusCode, audit.body).toBe(200);
    const adminAudit = await call('GET', `/admin/audit?target=${punishmentId}`, senior.headers);
    expect(adminAudit.statusCode, adminAudit.body).toBe(200);
    const shown = {
      events: (audit.json().events as { type: string }[]).map((e) => e.type),
      adminRows: (adminAudit.json().rows as { action: string }[]).map((r) => r.action),
      namesPerson: audit.body.includes(userId),
      revokeReason: audit.body.includes('SECRET-REVOKE-REASON') || adminAudit.body.includes('SECRET-REVOKE-REASON'),
      botNote: audit.body.includes('SECRET-BOT-NOTE') || audit.body.includes('SECRET-REF'),
    };
    expect(shown).toEqual({ events: [], adminRows: [], namesPerson: false, revokeReason: false, botNote: false });
  });
});

describe('finding B: a user lookup enqueued beside a restricted delivery named the person in GET /audit', () => {
  it('a punishment citing a flagged report enqueues no lookup: its person is in no list, event or admin audit row below supervisor rank', async () => {
    const userId = chatId();
    const reportId = await flaggedReport('LOOKUP-AUDIT', userId);
    const issued = await call('POST', '/punishments', supervisor.headers, { user_id: userId, reason: 'Harassment', duration: '7d', report_id: reportId });
    expect(issued.statusCode, issued.body).toBe(201);
    const punishmentId = issued.json().punishment.punishment_id as string;
    const { rows } = await t.db.production.query(`select kind, punishment_id from discipline_deliveries where user_id = $1::text order by item_id`, [userId]);
    expect(rows).toEqual([{ kind: 'issue', punishment_id: punishmentId }]);
    // The bot delivers it; the queue list, the audit log and the admin audit name no one.
    await drainUntil((i) => i.punishment_id === punishmentId, (i) => completeDelivery(i));
    for (const url of ['/discipline/pending?status=pending,processing,success,failed', '/audit?event=delivery&limit=500', `/audit?search=${userId}`, '/admin/audit?limit=200']) {
      const res = await call('GET', url, senior.headers);
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).not.toContain(userId);
    }
  });
});

describe('finding C: a restricted delivery names who issued the punishment', () => {
  it('GET /discipline/pending below supervisor rank: the placeholder of a flagged case\'s issue delivery carries requested_by, the issuer (the punishment placeholder withholds "who issued it")', async () => {
    const userId = chatId();
    const reportId = await flaggedReport('ISSUER', userId);
    const issuer = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    const issued = await call('POST', '/punishments', issuer.headers, { user_id: userId, reason: 'Harassment', duration: '7d', report_id: reportId });
    expect(issued.statusCode, issued.body).toBe(201);
    const punishmentId = issued.json().punishment.punishment_id as string;
    const agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const pending = await call('GET', '/discipline/pending', agent.headers);
    expect(pending.statusCode).toBe(200);
    const item = (pending.json().items as { punishment_id: string | null; restricted?: true; requested_by: string | null }[]).find((i) => i.punishment_id === punishmentId)!;
    expect(item.restricted).toBe(true);
    expect(item.requested_by).toBeNull();
    expect(pending.body).not.toContain(issuer.agent.chat_id);
  });
  it("GET /actions/pending/supervisor below supervisor rank: a flagged case's action placeholder carries requested_by, the assigned agent the report placeholder withholds", async () => {
    const assignee = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    const reportId = `ASSIGNEE-${chatId()}`;
    const created = await call('POST', '/reports/create', key, {
      report_id: reportId, reporter: chatId(), reported: chatId(), reason: 'SECRET', notes: 'n', evidence: 'e', is_supervisor: true, assigned_agent: assignee.agent.chat_id,
    });
    expect(created.statusCode, created.body).toBe(201);
    const acted = await call('POST', `/reports/${reportId}/action`, assignee.headers, { action: 'investigate', reason: 'SECRET-PAYLOAD' });
    expect(acted.statusCode, acted.body).toBe(200);
    // The report placeholder does not say who works the case...
    const list = await call('GET', '/reports', senior.headers);
    const placeholder = (list.json().reports as { report_id: string }[]).find((r) => r.report_id === reportId);
    expect(placeholder).not.toHaveProperty('assigned_agent');
    // ...its queue action's placeholder should not either.
    const queue = await call('GET', '/actions/pending/supervisor', senior.headers);
    expect(queue.statusCode, queue.body).toBe(200);
    const item = (queue.json().actions as { report_id: string; restricted?: true; requested_by: string | null }[]).find((a) => a.report_id === reportId)!;
    expect(item.restricted).toBe(true);
    expect(item.requested_by).toBeNull();
  });
});

describe('finding D: whether a person has a stored profile withheld (a party of a flagged report) is answered by the issue flow', () => {
  it('a Senior Agent issuing an unflagged punishment sees profile null and no lookup of theirs for a flagged party, profile null and a lookup for anyone else', async () => {
    const flaggedParty = chatId();
    const reporter = chatId();
    const reportId = await flaggedReport('PROFILE-ORACLE', flaggedParty, reporter);
    const stored = await call('POST', `/reports/${reportId}/chat-profiles`, key, { reporter: { chat_id: reporter, username: 'r' }, reported: { chat_id: flaggedParty, username: 'SECRET-PARTY' } });
    expect(stored.statusCode, stored.body).toBe(200);
    const stranger = chatId();

    const probe = async (userId: string) => {
      const issued = await call('POST', '/punishments', senior.headers, { user_id: userId, reason: 'Spam', duration: '1d' });
      expect(issued.statusCode, issued.body).toBe(201);
      const pending = await call('GET', '/discipline/pending', senior.headers);
      const mine = (pending.json().items as { kind: string; user_id: string | null; requested_by: string | null }[])
        .filter((i) => i.kind === 'user_lookup' && i.requested_by === senior.agent.chat_id && i.user_id === userId);
      return { profile: issued.json().punishment.profile, lookupEnqueued: mine.length > 0 };
    };
    // The two must answer alike: otherwise the difference says "this person is a party of a flagged report".
    expect(await probe(flaggedParty)).toEqual(await probe(stranger));
  });
});

describe('finding E: POST /discipline/user-lookup is an oracle for the person of a lookup placeholder', () => {
  it("a Senior Agent's lookup of the person punished in a flagged case is refused 409 LOOKUP_PENDING (the hidden lookup's person), a stranger's is not", async () => {
    const userId = chatId();
    const reportId = await flaggedReport('LOOKUP-409', userId);
    const issued = await call('POST', '/punishments', supervisor.headers, { user_id: userId, reason: 'Harassment', duration: '7d', report_id: reportId });
    expect(issued.statusCode, issued.body).toBe(201);
    // The Senior Agent sees only placeholders (user_id null) for the delivery and the lookup...
    const pending = await call('GET', '/discipline/pending', senior.headers);
    expect(pending.body).not.toContain(userId);
    // ...and probes candidates: the hidden lookup's person answers differently from anyone else.
    const strangerProbe = await call('POST', '/discipline/user-lookup', senior.headers, { user_id: chatId() });
    const targetProbe = await call('POST', '/discipline/user-lookup', senior.headers, { user_id: userId });
    expect({ status: targetProbe.statusCode, namesPerson: targetProbe.body.includes(userId) && targetProbe.statusCode !== 201 }).toEqual({ status: strangerProbe.statusCode, namesPerson: false });
  });
});

describe('finding F: TRUST_PROXY takes a list of hop counts (or a bare number) as addresses, silently', () => {
  it("'1,2' and '2,' are refused at boot as '1' is, not read as the addresses 0.0.0.1 and 0.0.0.2", async () => {
    const { parseConfig } = await import('../src/config.js');
    for (const value of ['1,2', '2,']) {
      expect(() => parseConfig({ TRUST_PROXY: value }), value).toThrow('TRUST_PROXY');
    }
  });
});
