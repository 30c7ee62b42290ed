// Who may create, read, update and delete a report (spec: Reports, Authentication): the key,
// clearances, assignment and supervisor rank on flagged reports.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person, type PersonOptions } from './helpers/identity.js';
import { key, reportCrudHelpers, type Row } from './helpers/reports.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const { base, timeline, createOk, patch, del } = reportCrudHelpers(() => t);

describe('authorization matrix', () => {
  const person = (options: PersonOptions) => signedIn(t, options);
  const statusOf = async (send: (h: Record<string, string>) => Promise<{ statusCode: number }>, h: Record<string, string>) => (await send(h)).statusCode;

  it('create: 401 without credentials, key ok, sessions from clearance 2 (manage_dockets)', async () => {
    const send = (h: Record<string, string>) => t.app.inject({ method: 'POST', url: '/reports/create', headers: h, payload: base() });
    expect(await statusOf(send, {})).toBe(401);
    expect(await statusOf(send, { authorization: 'wrong' })).toBe(401);
    expect(await statusOf(send, key)).toBe(201);
    for (let clearance = 1; clearance <= 5; clearance++) {
      expect(await statusOf(send, (await person({ clearance })).headers), `clearance ${clearance}`).toBe(clearance >= 2 ? 201 : 403);
    }
  });

  it('get: view_dashboard from clearance 1; flagged reports need supervisor rank; the key sees all', async () => {
    const open = await createOk();
    const flagged = await createOk({ is_supervisor: true });
    const get = (id: string) => (h: Record<string, string>) => t.app.inject({ url: `/reports/${id}`, headers: h });
    expect(await statusOf(get(open), {})).toBe(401);
    expect(await statusOf(get(flagged), key)).toBe(200);
    expect(await statusOf(get(open), (await person({ clearance: null })).headers)).toBe(403);
    for (let clearance = 1; clearance <= 5; clearance++) {
      expect(await statusOf(get(open), (await person({ clearance })).headers)).toBe(200);
      const agent = await person({ clearance, rank: 'Senior Agent' });
      const res = await get(flagged)(agent.headers);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ success: false, error: 'Supervisor reports require supervisor rank', code: 'SUPERVISOR_ONLY' });
      expect(await statusOf(get(flagged), (await person({ clearance, rank: 'Supervisor' })).headers)).toBe(200);
    }
  });

  it('update: manage_dockets, the assigned agent only, supervisor rank on flagged reports, reassign_docket to reassign', async () => {
    const check = async (who: Person | 'key' | 'none', options: Row, body: Row, expected: number, code?: string) => {
      const assignee = who === 'key' || who === 'none' ? undefined : who.agent.chat_id;
      const id = await createOk({ ...(options.assigned === false || !assignee ? {} : { assigned_agent: assignee }), is_supervisor: options.flagged ?? false });
      const headers = who === 'key' ? key : who === 'none' ? {} : who.headers;
      const res = await patch(id, body, headers);
      expect(res.statusCode, JSON.stringify({ options, body, res: res.json() })).toBe(expected);
      if (code) expect(res.json().code).toBe(code);
      if (expected !== 200) expect(await timeline(id)).toHaveLength(1);
    };
    await check('none', {}, { status: 'Pending' }, 401);
    await check('key', {}, { status: 'Pending' }, 200);
    await check(await person({ clearance: 1 }), {}, { status: 'Pending' }, 403, 'INSUFFICIENT_CLEARANCE');
    for (let clearance = 2; clearance <= 5; clearance++) {
      await check(await person({ clearance }), {}, { status: 'Pending' }, 200);
      await check(await person({ clearance, rank: 'Director' }), { assigned: false }, { status: 'Pending' }, 403, 'NOT_ASSIGNED');
      await check(await person({ clearance, rank: 'Senior Agent' }), { flagged: true }, { status: 'Pending' }, 403, 'SUPERVISOR_ONLY');
      await check(await person({ clearance, rank: 'Supervisor' }), { flagged: true }, { status: 'Pending' }, 200);
      // reassign_docket: clearance 3 and Head Investigator rank.
      const reassign = { assigned_agent: chatId() };
      await check(await person({ clearance, rank: 'Supervisor' }), {}, reassign, 403, 'INSUFFICIENT_CLEARANCE');
      await check(await person({ clearance, rank: 'Head Investigator' }), { assigned: false }, reassign, clearance >= 3 ? 200 : 403);
    }
  });

  it('delete: delete_docket (clearance 5) for sessions; flagged reports need supervisor rank', async () => {
    for (let clearance = 1; clearance <= 5; clearance++) {
      const id = await createOk();
      expect(await statusOf((h) => del(id, { reason: 'r' }, h), (await person({ clearance })).headers)).toBe(clearance === 5 ? 200 : 403);
    }
    const id = await createOk({ is_supervisor: true });
    expect(await statusOf((h) => del(id, { reason: 'r' }, h), {})).toBe(401);
    expect(await statusOf((h) => del(id, { reason: 'r' }, h), (await person({ clearance: 5, rank: 'Senior Agent' })).headers)).toBe(403);
    expect(await statusOf((h) => del(id, { reason: 'r' }, h), (await person({ clearance: 5, rank: 'Supervisor' })).headers)).toBe(200);
    const other = await createOk();
    expect(await statusOf((h) => del(other, { reason: 'r' }, h), key)).toBe(200);
  });
});
