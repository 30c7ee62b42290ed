// Every refusal the declared access implies, for every operation of /openapi.json (issue 28): the
// document's x-access (the route's config: credential kind, permission, admin capability, rank,
// report gate) says who is excluded, and each excluded principal gets the spec's 401 or 403 in the
// envelope, with a body and a query the route would refuse as invalid (refusal comes first, issue
// 29), and nothing in any table changes. A new route is covered by declaring its access; one without x-access fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIRECTOR_ONLY_CAPABILITIES, MINIMUM_CLEARANCES, MINIMUM_RANKS, RANKS, type Permission, type Rank } from '../src/platform/auth/permissions.js';
import { createTestApp, DASHBOARD_ORIGIN, DEMO_KEY, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

interface Access {
  auth: 'key' | 'session' | 'either' | 'none';
  permission?: Permission;
  admin?: string;
  rank?: Rank;
  trainer?: boolean;
  member?: 'trainer' | 'participant';
  report?: string;
}
interface Operation {
  method: string;
  path: string;
  params: string[];
  access: Access | undefined;
}
interface Refusal {
  who: string;
  headers: Record<string, string>;
  status: 401 | 403;
  /** The codes the refusal may carry (the demo session, say, is unknown here: 401 whichever way it is read). */
  codes: string[];
}

const GATED = new Set(['update', 'act', 'timeline', 'contact', 'note', 'evidence']);
const SUPERVISOR_RANK_MAY = new Set(['note', 'evidence']);

let t: TestApp;
let operations: Operation[];
let tables: string[];
const ids: Record<string, string> = { game_user_id: '5', chat_id: '300000000000000001', action_id: '1', item_id: '1', punishment_id: 'AB1CD2', session_id: '1' };
const people = new Map<string, Person>();
let flagged: string;
let othersReport: string;

/** A signed-in agent made once per description, before the tables are digested. */
async function person(label: string, options: Parameters<typeof signedIn>[1]): Promise<Person> {
  let found = people.get(label);
  if (!found) people.set(label, (found = await signedIn(t, options)));
  return found;
}

const below = (rank: Rank): Rank | null => (RANKS.indexOf(rank) > 0 ? RANKS[RANKS.indexOf(rank) - 1]! : null);

/** Who the operation's declared access excludes, and how each is refused. */
async function refusalsOf(op: Operation): Promise<Refusal[]> {
  const access = op.access!;
  if (access.auth === 'none') return [];
  const session = async (label: string, options: Parameters<typeof signedIn>[1]) => (await person(label, options)).headers;
  const refusals: Refusal[] = [
    { who: 'no credential', headers: { host: 'localhost' }, status: 401, codes: ['UNAUTHORIZED'] },
    { who: "the demo environment's key", headers: { host: 'localhost', authorization: DEMO_KEY }, status: 401, codes: ['UNAUTHORIZED'] },
    { who: "a demo environment's session", headers: { ...(await session('demo Director', { env: 'demo', rank: 'Director', clearance: 5, allowlisted: true })), host: 'localhost' }, status: 401, codes: ['UNAUTHORIZED', 'KEY_REQUIRED'] },
  ];
  if (access.auth === 'session') refusals.push({ who: 'the key', headers: { host: 'localhost', authorization: PRODUCTION_KEY }, status: 403, codes: ['SESSION_REQUIRED'] });
  if (access.auth === 'key') refusals.push({ who: 'a Director', headers: await session('Director', { rank: 'Director', clearance: 5, allowlisted: true }), status: 401, codes: ['KEY_REQUIRED'] });
  if (access.permission) {
    const minimum = MINIMUM_CLEARANCES[access.permission];
    const clearance = minimum > 1 ? minimum - 1 : null;
    refusals.push({ who: `a Director at clearance ${clearance}`, headers: await session(`Director ${clearance}`, { rank: 'Director', clearance, allowlisted: true }), status: 403, codes: ['INSUFFICIENT_CLEARANCE'] });
    const rank = MINIMUM_RANKS[access.permission];
    const lower = rank && below(rank);
    if (lower) refusals.push({ who: `a ${lower} at clearance 5`, headers: await session(`${lower} 5`, { rank: lower, clearance: 5 }), status: 403, codes: ['INSUFFICIENT_CLEARANCE'] });
  }
  if (access.admin) {
    refusals.push({ who: 'a Director off the allowlist', headers: await session('Director 5 off the allowlist', { rank: 'Director', clearance: 5 }), status: 403, codes: ['NOT_ADMIN'] });
    if ((DIRECTOR_ONLY_CAPABILITIES as readonly string[]).includes(access.admin)) {
      refusals.push({ who: 'an allowlisted Head Investigator', headers: await session('Head Investigator 5 allowlisted', { rank: 'Head Investigator', clearance: 5, allowlisted: true }), status: 403, codes: ['DIRECTOR_REQUIRED'] });
    } else {
      const clearance = MINIMUM_CLEARANCES[access.admin as Permission] - 1;
      refusals.push({ who: `an allowlisted Director at clearance ${clearance}`, headers: await session(`Director ${clearance}`, { rank: 'Director', clearance, allowlisted: true }), status: 403, codes: ['INSUFFICIENT_CLEARANCE'] });
    }
  }
  if (access.rank && below(access.rank)) {
    const lower = below(access.rank)!;
    refusals.push({ who: `a ${lower} at clearance 5`, headers: await session(`${lower} 5`, { rank: lower, clearance: 5 }), status: 403, codes: ['RANK_REQUIRED'] });
  }
  if (access.trainer) {
    refusals.push({ who: 'an Agent who does not train', headers: await session('Agent 5', { rank: 'Agent', clearance: 5 }), status: 403, codes: ['TRAINER_REQUIRED'] });
  }
  if (access.member) {
    refusals.push({
      who: 'a trainer outside the session',
      headers: await session('outside trainer', { rank: 'Agent', clearance: 5, is_trainer: true }),
      status: 403,
      codes: [access.member === 'trainer' ? 'NOT_SESSION_TRAINER' : 'NOT_SESSION_MEMBER'],
    });
    if (access.member === 'trainer') {
      refusals.push({ who: "the session's trainee", headers: (await session('trainee', { rank: 'Agent', status: 'onboarding', clearance: 1 })), status: 403, codes: ['NOT_SESSION_TRAINER'] });
    }
  }
  if (access.report) {
    // Every permission but reassignment's, and no supervisor rank: the report is the only reason left.
    const senior = await session('Senior Agent 5', { rank: 'Senior Agent', clearance: 5 });
    refusals.push({ who: 'a Senior Agent on a flagged report', headers: { ...senior, report: flagged }, status: 403, codes: ['SUPERVISOR_ONLY'] });
    if (GATED.has(access.report)) {
      refusals.push({ who: "a Senior Agent on another agent's report", headers: { ...senior, report: othersReport }, status: 403, codes: ['NOT_ASSIGNED'] });
      if (!SUPERVISOR_RANK_MAY.has(access.report)) {
        const director = await session('Director', { rank: 'Director', clearance: 5, allowlisted: true });
        refusals.push({ who: "a Director on another agent's report", headers: { ...director, report: othersReport }, status: 403, codes: ['NOT_ASSIGNED'] });
      }
    }
  }
  return refusals;
}

/** A digest of every row of every table: any insert, update or delete changes it. */
async function everything(): Promise<Record<string, string>> {
  const { rows } = await t.db.production.query<Record<string, string>>(
    `select ${tables.map((name) => `(select md5(coalesce(string_agg(x::text, ',' order by x::text), '')) from "${name}" x) as "${name}"`).join(', ')}`,
  );
  return rows[0]!;
}

function send(op: Operation, refusal: Refusal) {
  const { report, ...headers } = refusal.headers;
  const url = op.params.reduce((path, name) => path.replace(`{${name}}`, name === 'report_id' ? (report ?? flagged) : (ids[name] ?? '1')), op.path);
  const body = op.method !== 'GET';
  // A body that is no object and query values out of every range: invalid for every operation
  // that takes them, so a 400 would mean the request was looked at before the caller was refused.
  return t.app.inject({
    method: op.method as 'GET',
    url: `${url}?limit=-1&offset=-1&status=%00&type=%00`,
    headers: body ? { ...headers, 'content-type': 'application/json', origin: DASHBOARD_ORIGIN } : headers,
    ...(body ? { payload: '["not an object"]' } : {}),
  });
}

beforeAll(async () => {
  t = await createTestApp();
  const doc = (await t.app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { 'x-access'?: Access; parameters?: { name: string; in: string }[] }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      params: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
      access: op['x-access'],
    })),
  );
  const create = async (body: Record<string, unknown>) => {
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { host: 'localhost', authorization: PRODUCTION_KEY }, payload: body });
    expect(res.statusCode, res.body).toBe(201);
    return body.report_id as string;
  };
  const senior = await person('Senior Agent 5', { rank: 'Senior Agent', clearance: 5 });
  const base = { reporter: chatId(), reported: chatId(), reason: 'r', notes: 'n', evidence: 'e', status: 'Under Investigation' };
  flagged = await create({ ...base, report_id: 'MATRIX-FLAGGED', is_supervisor: true, assigned_agent: senior.agent.chat_id });
  othersReport = await create({ ...base, report_id: 'MATRIX-OTHERS', assigned_agent: chatId() });
  for (const id of [flagged, othersReport]) {
    await t.app.inject({ method: 'POST', url: `/reports/${id}/action`, headers: { host: 'localhost', authorization: PRODUCTION_KEY }, payload: { action: 'contact_reporter', reason: 'Hello' } });
  }
  const trainee = await person('trainee', { rank: 'Agent', status: 'onboarding', clearance: 1 });
  const trainer = await person('trainer', { rank: 'Agent', clearance: 5, is_trainer: true });
  const started = await t.app.inject({ method: 'POST', url: '/training/sessions', headers: trainer.headers, payload: { trainee_id: trainee.agent.chat_id } });
  expect(started.statusCode, started.body).toBe(201);
  ids.session_id = String(started.json().session.id);
  for (const op of operations) if (op.access) await refusalsOf(op);
  const { rows } = await t.db.production.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = 'public' order by 1`);
  tables = rows.map((r) => r.name);
});
afterAll(() => t.close());

describe('the refusal matrix', () => {
  it('covers every operation: each declares its access', () => {
    expect(operations.length).toBeGreaterThan(90);
    expect(operations.filter((op) => op.access === undefined).map((op) => `${op.method} ${op.path}`)).toEqual([]);
  });

  it('refuses every principal the declaration excludes, before the body, and writes nothing', async () => {
    const before = await everything();
    let refused = 0;
    for (const op of operations) {
      for (const refusal of await refusalsOf(op)) {
        const res = await send(op, refusal);
        const label = `${op.method} ${op.path} as ${refusal.who}`;
        expect(res.statusCode, `${label}: ${res.body}`).toBe(refusal.status);
        const body = res.json();
        expect(body, label).toEqual({ success: false, error: expect.any(String), code: expect.any(String) });
        expect(refusal.codes, `${label}: ${res.body}`).toContain(body.code);
        refused++;
      }
    }
    expect(await everything()).toEqual(before);
    // Each guarded operation is refused at least three ways (no credential, the other environment's two).
    expect(refused).toBeGreaterThanOrEqual(operations.filter((op) => op.access?.auth !== 'none').length * 3);
  });

  it('lets the principal who passes every gate through (the matrix is not refusing everyone)', async () => {
    const director = people.get('Director')!;
    const own = await t.app.inject({ url: `/reports/${flagged}`, headers: director.headers });
    expect(own.statusCode).toBe(200);
    const senior = people.get('Senior Agent 5')!;
    expect((await t.app.inject({ url: `/reports/${othersReport}`, headers: senior.headers })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/actions/pending/supervisor', headers: senior.headers })).statusCode).toBe(200);
  });
});
