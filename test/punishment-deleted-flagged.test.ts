// Events about a punishment whose cited report was deleted while flagged (issue 38, found by the
// model-based test): the deletion clears the punishment's report_id (its deleted_report keeps the
// life), and the events written afterwards (a delivery's completion, a revoke, a change, an
// expiry, the sweep's moves) named no report, so GET /audit showed them, the punished person and
// the bot's note to everyone who reads the audit log. They name the deleted report's id: as hidden
// as the report was, to supervisors as findable by it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let supervisor: Person;
let director: Person;
let senior: Person;
beforeAll(async () => {
  t = await createTestApp();
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
  director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
  // decide_appeal and admin_audit (clearance 4, allowlisted), below supervisor rank.
  senior = await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true });
});
afterAll(() => t.close());

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
  t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

async function must(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, status: number, payload?: object) {
  const res = await call(method, url, headers, payload);
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.body === '' ? undefined : res.json();
}

describe('events about a punishment of a report deleted while flagged', () => {
  it('name the deleted report: hidden below supervisor rank in GET /audit and /admin/audit, found by a supervisor under its id', async () => {
    const reportId = `DELETED-FLAGGED-${chatId()}`;
    const userId = chatId();
    await must('POST', '/reports/create', key, 201, { report_id: reportId, reporter: chatId(), reported: userId, reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: true });
    await must('POST', '/reports/create', key, 201, { report_id: `${reportId}-B`, reporter: chatId(), reported: chatId(), reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: true });
    const first = (await must('POST', '/punishments', supervisor.headers, 201, { user_id: userId, reason: 'Harassment', duration: '7d', report_id: reportId })).punishment;
    const second = (await must('POST', '/punishments', supervisor.headers, 201, { user_id: userId, reason: 'Harassment', duration: '30d', report_id: reportId })).punishment;
    // The bot holds the first's delivery while the report is deleted.
    let claimed: { item_id: number; punishment_id: string | null } | undefined;
    for (let i = 0; i < 20 && claimed?.punishment_id !== first.punishment_id; i++) claimed = (await must('GET', '/discipline/next', key, 200)).item;
    expect(claimed?.punishment_id).toBe(first.punishment_id);
    await must('DELETE', `/reports/${reportId}`, director.headers, 200, { reason: 'Duplicate docket' });
    const stored = await t.db.production.query('select report_id, deleted_report is not null as kept from punishments where punishment_id = any($1::text[]) order by punishment_id', [[first.punishment_id, second.punishment_id]]);
    expect(stored.rows).toEqual([{ report_id: null, kept: true }, { report_id: null, kept: true }]);

    // After the deletion: a delivery failed with a note, a revoke of the first, a change and an expiry of the second.
    const note = `NOTE-${chatId()}`;
    const revokeReason = `REVOKE-${chatId()}`;
    const changeReason = `CHANGE-${chatId()}`;
    await must('POST', `/discipline/${claimed!.item_id}/complete`, key, 200, { result: 'failed', note });
    await must('POST', `/punishments/${first.punishment_id}/revoke`, supervisor.headers, 200, { reason: revokeReason });
    await must('PATCH', `/punishments/${second.punishment_id}`, supervisor.headers, 200, { reason: changeReason, notes: 'Second offence' });
    // Time moved for the second only (its term ran out), then a read's sweep expires it.
    await t.db.production.query(`update punishments set expires_at = now() - interval '1 minute' where punishment_id = $1::text`, [second.punishment_id]);
    expect((await must('GET', `/punishments/${second.punishment_id}`, supervisor.headers, 200)).punishment.status).toBe('Expired');

    const types = ['delivery.failed', 'punishment.revoked', 'punishment.updated', 'punishment.expired'];
    const { rows } = await t.db.production.query<{ type: string; report_id: string | null }>(
      `select type, report_id from events where type = any($1::text[]) and (data->>'punishment_id') = any($2::text[]) and id > (select max(d.id) from events d where d.type = 'report.deleted' and d.report_id = $3::text) order by id`,
      [types, [first.punishment_id, second.punishment_id], reportId],
    );
    expect(rows.map((r) => r.type).sort()).toEqual([...types].sort());
    expect(rows.filter((r) => r.report_id !== reportId)).toEqual([]);

    for (const url of ['/audit?limit=500', `/audit?search=${note}`, `/audit?search=${userId}`, '/admin/audit?limit=200']) {
      const res = await call('GET', url, senior.headers);
      expect(res.statusCode, url).toBe(200);
      for (const secret of [note, revokeReason, changeReason, userId]) expect(res.body, `${url} carries ${secret}`).not.toContain(secret);
    }
    const found = await call('GET', `/audit?report_id=${reportId}&limit=500`, supervisor.headers);
    expect((found.json().events as { type: string }[]).map((e) => e.type)).toEqual(expect.arrayContaining(types));
    expect(found.body).toContain(note);
  });
});
