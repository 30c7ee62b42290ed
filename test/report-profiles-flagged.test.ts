// A stored chat profile of a party of a supervisor-flagged report is withheld from those below
// supervisor rank in every answer that carries profiles (issue 38, finding 1): the 201 of a create
// naming that person, a PATCH, a GET and an action's answer on any visible report naming them, as
// GET /punishments/users/<id>/profile already withholds it. Made through the routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let agent: Person;
let supervisor: Person;
beforeAll(async () => {
  t = await createTestApp();
  agent = await signedIn(t, { rank: 'Agent', clearance: 3 });
  supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
});
afterAll(() => t.close());

const call = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) =>
  t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

/** A person whose profile the bot stored through a flagged report; the username is the canary. */
async function flaggedParty(): Promise<{ person: string; canary: string }> {
  const person = chatId();
  const canary = `canary_${person}`;
  const flagged = `FLAGGED-PROFILE-${person}`;
  expect((await call('POST', '/reports/create', key, { report_id: flagged, reporter: chatId(), reported: person, reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: true })).statusCode).toBe(201);
  const stored = await call('POST', `/reports/${flagged}/chat-profiles`, key, { reported: { chat_id: person, username: canary, global_name: canary } });
  expect(stored.statusCode, stored.body).toBe(200);
  return { person, canary };
}

describe('a flagged party\'s stored profile in the answers on other reports', () => {
  it('is withheld below supervisor rank from create, GET, PATCH and action answers; shown to a supervisor', async () => {
    const { person, canary } = await flaggedParty();
    const reportId = `NAMES-FLAGGED-PARTY-${person}`;
    const created = await call('POST', '/reports/create', agent.headers, { report_id: reportId, reporter: chatId(), reported: person, reason: 'Spam', notes: 'n', evidence: 'e', assigned_agent: agent.agent.chat_id });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().report.chat_profiles).toEqual([]);
    expect(created.body).not.toContain(canary);

    const read = await call('GET', `/reports/${reportId}`, agent.headers);
    expect(read.statusCode).toBe(200);
    expect(read.json().report.chat_profiles).toEqual([]);
    expect(read.body).not.toContain(canary);

    const acted = await call('POST', `/reports/${reportId}/investigation/begin`, agent.headers);
    expect(acted.statusCode, acted.body).toBe(200);
    expect(acted.body).not.toContain(canary);

    const noted = await call('POST', `/reports/${reportId}/notes`, agent.headers, { note: 'Checked the logs' });
    expect(noted.statusCode, noted.body).toBe(201);
    expect(noted.body).not.toContain(canary);

    const patched = await call('PATCH', `/reports/${reportId}/update`, agent.headers, { status: 'Pending' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.body).not.toContain(canary);

    // The answer GET /punishments/users/<id>/profile gives the same Agent: nothing stored.
    expect((await call('GET', `/punishments/users/${person}/profile`, agent.headers)).statusCode).toBe(404);

    const whole = await call('GET', `/reports/${reportId}`, supervisor.headers);
    expect(whole.json().report.chat_profiles).toEqual([expect.objectContaining({ chat_id: person, username: canary })]);
  });
});

describe('GET /reports filters on what a placeholder does not show', () => {
  it('contact_open matches no flagged report below supervisor rank, in the rows or the total; a supervisor finds it', async () => {
    const reportId = `FLAGGED-CONTACT-${chatId()}`;
    expect((await call('POST', '/reports/create', key, { report_id: reportId, reporter: chatId(), reported: chatId(), reason: 'Harassment', notes: 'n', evidence: 'e', is_supervisor: true })).statusCode).toBe(201);
    const contacted = await call('POST', `/reports/${reportId}/action`, key, { action: 'contact_reporter', reason: 'Tell us more' });
    expect(contacted.statusCode, contacted.body).toBe(200);
    const listed = (query: string, who: Person) => call('GET', `/reports?limit=200&${query}`, who.headers).then((r) => r.json() as { total: number; reports: { report_id: string }[] });

    for (const query of ['type=supervisor&contact_open=true', 'contact_open=true', 'contact_open=true&statuses=Open']) {
      const page = await listed(query, agent);
      expect(page.reports.map((r) => r.report_id)).not.toContain(reportId);
      if (query.startsWith('type=supervisor')) expect(page).toMatchObject({ total: 0, reports: [] });
      expect((await listed(query, supervisor)).reports.map((r) => r.report_id)).toContain(reportId);
    }
    // Without the filter, the placeholder takes its place, by what it shows.
    const all = await listed('type=supervisor', agent);
    expect(all.reports).toContainEqual({ report_id: reportId, is_supervisor: true, restricted: true, status: 'Open', created_at: expect.any(String), updated_at: expect.any(String) });
  });
});
