// Lists in time order break ties by creation order (issue 20, migration 0019). Rows are created
// through the API, then their timestamps are set equal in SQL, so only the tie-breaker decides.
// The ids are chosen so that the old tie-breakers (chat id ascending, report id descending) would
// give another order; punishment ids are random, six of them make a lucky match unlikely.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { admin } from './helpers/admin.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
const FUTURE = '2999-01-01T00:00:00.000Z';
const PAST = '1990-01-01T00:00:00.000Z';
type Row = Record<string, any>;

let t: TestApp;
let director: Person;
beforeAll(async () => {
  t = await createTestApp();
  director = await admin(t);
});
afterAll(() => t.close());

/** Sets `column` of the given rows to one instant and checks that they do share it. */
async function tie(table: string, idColumn: string, ids: string[], at: string, column = 'created_at') {
  const db = t.db.production;
  await db.query(`update ${table} set ${column} = $2::timestamptz where ${idColumn} = any($1::text[])`, [ids, at]);
  const { rows } = await db.query<{ n: number; at: string }>(
    `select count(distinct ${column})::int as n, min(${column}) as at from ${table} where ${idColumn} = any($1::text[])`,
    [ids],
  );
  expect(rows[0]).toEqual({ n: 1, at });
}

async function list(url: string, field: string, idField: string, headers: Record<string, string> = key): Promise<string[]> {
  const res = await t.app.inject({ url, headers });
  expect(res.statusCode, url).toBe(200);
  const body = res.json();
  expect(body.success).toBe(true);
  return (body[field] as Row[]).map((row) => row[idField] as string);
}

describe('agents sharing created_at', () => {
  it('GET /agents (all and by status) and GET /admin/agents list the last created first', async () => {
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = chatId();
      const res = await t.app.inject({ method: 'POST', url: '/agents/create', headers: key, payload: { chat_id: id, name: `Tie ${i}` } });
      expect(res.statusCode).toBe(201);
      created.push(id);
    }
    await tie('agents', 'chat_id', created, FUTURE);
    const newestFirst = [...created].reverse();
    expect((await list('/agents', 'agents', 'chat_id')).slice(0, 3)).toEqual(newestFirst);
    expect((await list('/agents?status=onboarding', 'agents', 'chat_id')).slice(0, 3)).toEqual(newestFirst);
    expect((await list('/admin/agents', 'agents', 'chat_id', director.headers)).slice(0, 3)).toEqual(newestFirst);
  });
});

describe('reports sharing created_at and updated_at', () => {
  const create = async (report_id: string) => {
    const payload = { report_id, reporter: chatId(), reported: chatId(), reason: 'Tie check', notes: 'n', evidence: 'e' };
    expect((await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload })).statusCode).toBe(201);
  };

  it('newest and updated: the last created first, on every list shape and across pages', async () => {
    const created = ['TIE-N-C', 'TIE-N-B', 'TIE-N-A'];
    for (const id of created) await create(id);
    await tie('reports', 'report_id', created, FUTURE);
    await tie('reports', 'report_id', created, FUTURE, 'updated_at');
    const newestFirst = [...created].reverse();
    const urls = [
      '/reports',
      '/reports?limit=3',
      '/reports?limit=3&type=operator',
      '/reports?limit=3&contact_open=false',
      '/reports?limit=3&statuses=Open',
      '/reports?limit=3&statuses=Open,Pending&contact_open=false',
      '/reports?limit=3&sort=updated',
      '/reports?limit=3&sort=updated&type=operator',
      '/reports?limit=3&sort=updated&statuses=Open',
    ];
    for (const url of urls) expect((await list(url, 'reports', 'report_id')).slice(0, 3), url).toEqual(newestFirst);
    const pages = [];
    for (let offset = 0; offset < 3; offset++) pages.push(...(await list(`/reports?limit=1&offset=${offset}`, 'reports', 'report_id')));
    expect(pages).toEqual(newestFirst);
    expect(await list('/admin/reports?search=tie-n-', 'reports', 'report_id', director.headers)).toEqual(newestFirst);
    expect((await list('/admin/reports', 'reports', 'report_id', director.headers)).slice(0, 3)).toEqual(newestFirst);
  });

  it('oldest: the first created first', async () => {
    const created = ['TIE-O-A', 'TIE-O-C', 'TIE-O-B'];
    for (const id of created) await create(id);
    await tie('reports', 'report_id', created, PAST);
    for (const url of ['/reports?limit=3&sort=oldest', '/reports?limit=3&sort=oldest&statuses=Open', '/reports?limit=3&sort=oldest&type=operator']) {
      expect(await list(url, 'reports', 'report_id'), url).toEqual(created);
    }
  });
});

describe('punishments sharing created_at', () => {
  it('GET /punishments (all, by user, by status) lists the last issued first', async () => {
    const manager = await signedIn(t, { rank: 'Agent', clearance: 4, name: 'Tie Manager' });
    const user = chatId();
    const created: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/punishments', headers: manager.headers, payload: { user_id: user, reason: `Tie ${i}` } });
      expect(res.statusCode).toBe(201);
      created.push(res.json().punishment.punishment_id);
    }
    await tie('punishments', 'punishment_id', created, FUTURE);
    const newestFirst = [...created].reverse();
    for (const url of ['/punishments', `/punishments?user_id=${user}`, '/punishments?status=Active']) {
      expect((await list(url, 'punishments', 'punishment_id', manager.headers)).slice(0, 6), url).toEqual(newestFirst);
    }
  });
});
