// Every key-only operation (spec Authentication 2 and 3; issue 19), found in /openapi.json by its
// security (the route's declared config.auth): a browser session is not a credential there, so a
// signed-in Director, a cookie that is no live session and a bare request all get 401 in the
// envelope, and nothing in any table changes (a pickup that let the session through would claim
// the seeded action or delivery).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DASHBOARD_ORIGIN, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { makeItem, makeReport } from './helpers/discipline.js';
import { signedIn, type Person } from './helpers/identity.js';

const KEY_REQUIRED = {
  success: false,
  error: "This route takes the bot's API key in the Authorization header; a browser session is not a credential here",
  code: 'KEY_REQUIRED',
};

interface Operation {
  method: string;
  path: string;
  params: string[];
}

let t: TestApp;
let director: Person;
let keyOnly: Operation[];
let tables: string[];
const ids: Record<string, string> = { game_user_id: '5' };

beforeAll(async () => {
  t = await createTestApp();
  director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
  const doc = (await t.app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { security?: Record<string, unknown>[]; parameters?: { name: string; in: string }[] }>>;
  };
  keyOnly = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, op]) => JSON.stringify(op.security) === JSON.stringify([{ apiKey: [] }]))
      .map(([method, op]) => ({ method: method.toUpperCase(), path, params: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name) })),
  );
  // Work a session could take or change if it got through: a report, its pending action, a pending delivery.
  const report = await makeReport(t);
  ids.report_id = report;
  const action = await t.db.production.query<{ action_id: number }>(
    `insert into report_actions (report_id, kind, queue, status, payload) values ($1::text, 'claim', 'operator', 'pending', '{}'::jsonb) returning action_id`,
    [report],
  );
  ids.action_id = String(action.rows[0]!.action_id);
  ids.item_id = String((await makeItem(t, { reportId: report })).item_id);
  const { rows } = await t.db.production.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = 'public' order by 1`);
  tables = rows.map((r) => r.name);
});
afterAll(() => t.close());

/** A digest of every row of every table: any insert, update or delete changes it. */
async function everything(): Promise<Record<string, string>> {
  const { rows } = await t.db.production.query<Record<string, string>>(
    `select ${tables.map((name) => `(select md5(coalesce(string_agg(x::text, ',' order by x::text), '')) from "${name}" x) as "${name}"`).join(', ')}`,
  );
  return rows[0]!;
}

const urlOf = (op: Operation) => op.params.reduce((url, name) => url.replace(`{${name}}`, ids[name] ?? '1'), op.path);

const send = (op: Operation, headers: Record<string, string>) =>
  t.app.inject({
    method: op.method as 'GET',
    url: urlOf(op),
    headers: op.method === 'GET' ? headers : { ...headers, 'content-type': 'application/json', origin: DASHBOARD_ORIGIN },
    ...(op.method === 'GET' ? {} : { payload: '{}' }),
  });

describe('key-only routes', () => {
  it('are the ones the spec names (Authentication 2), as the OpenAPI document marks them', () => {
    const paths = keyOnly.map((op) => `${op.method} ${op.path}`);
    for (const expected of [
      'GET /generate/agreement', 'GET /generate/clearance', 'POST /util/timestamp', 'GET /actions/next', 'POST /actions/{action_id}/complete',
      'GET /discipline/next', 'POST /discipline/{item_id}/complete', 'POST /reports/{report_id}/contact/respond', 'GET /game/player/{game_user_id}',
    ]) {
      expect(paths).toContain(expected);
    }
  });

  it('answer a signed-in session with 401 KEY_REQUIRED in the envelope and write nothing', async () => {
    const before = await everything();
    for (const op of keyOnly) {
      const res = await send(op, director.headers);
      expect([res.statusCode, res.json()], `${op.method} ${urlOf(op)}`).toEqual([401, KEY_REQUIRED]);
    }
    expect(await everything()).toEqual(before);
  });

  it('answer a cookie that is no live session the same way, and no credential with 401 UNAUTHORIZED', async () => {
    const before = await everything();
    for (const op of keyOnly) {
      const stale = await send(op, { host: 'localhost', cookie: 'cms_session=production.not-a-session' });
      expect([stale.statusCode, stale.json()], `${op.method} ${urlOf(op)}`).toEqual([401, KEY_REQUIRED]);
      const bare = await send(op, { host: 'localhost' });
      expect([bare.statusCode, bare.json()], `${op.method} ${urlOf(op)}`).toEqual([401, { success: false, error: 'Authentication required', code: 'UNAUTHORIZED' }]);
    }
    expect(await everything()).toEqual(before);
  });

  it('still take the key (the seeded action is claimed by it)', async () => {
    const res = await t.app.inject({ url: '/actions/next', headers: { host: 'localhost', authorization: PRODUCTION_KEY } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, action: { action_id: Number(ids.action_id) } });
  });
});
