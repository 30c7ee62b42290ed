// Bodiless operations as clients send them (issue 31): axios and most fetch wrappers send
// `Content-Type: application/json` with an empty body on a POST the spec gives no body. For every
// operation of /openapi.json without a requestBody whose method can carry one, that request (the
// header with or without a charset, the body empty or only JSON whitespace: fast-check, seeded) is
// answered as the request without the header. The two are sent to twin apps, each given the same
// fixture by the same calls in the same order, so a first request that changes state (an
// investigation begun) is compared with its twin, not with a second request that finds it changed;
// status, body and every table's row count must match. Operations that do take a body still
// refuse an empty one with a 400 naming the body, after every gate, and write nothing.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { makeItem } from './helpers/discipline.js';
import { signedIn, type Person } from './helpers/identity.js';
import { importDemoScenarios } from './helpers/training.js';

const SEED = process.env.FUZZ_SEED === undefined ? 20260531 : Number(process.env.FUZZ_SEED);
const KEY = { host: 'localhost', authorization: PRODUCTION_KEY };

interface Operation {
  method: string;
  path: string;
  security: string[];
  params: string[];
  hasBody: boolean;
  bodySchema: { type?: string; $ref?: string } | undefined;
}
/** One app's fixture for one operation: who calls, and the path parameters. */
interface Fixture {
  director: Person;
  trainer: Person;
  demoDirector: Person;
  params: Record<string, string>;
}

let twins: [TestApp, TestApp];
let operations: Operation[];
let scenarios: Record<string, number>;
let components: Record<string, { type?: string }>;
const tables: string[] = [];

beforeAll(async () => {
  twins = [await createTestApp(), await createTestApp()];
  for (const t of twins) scenarios = await importDemoScenarios(t.db.production);
  const doc = (await twins[0].app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, {
      security?: Record<string, unknown>[];
      parameters?: { name: string; in: string }[];
      requestBody?: { content?: Record<string, { schema?: Operation['bodySchema'] }> };
    }>>;
    components?: { schemas?: Record<string, { type?: string }> };
  };
  components = doc.components?.schemas ?? {};
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      security: (op.security ?? []).flatMap((s) => Object.keys(s)),
      params: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
      hasBody: op.requestBody !== undefined,
      bodySchema: op.requestBody?.content?.['application/json']?.schema,
    })),
  );
  const { rows } = await twins[0].db.production.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = 'public' order by 1`);
  tables.push(...rows.map((r) => r.name));
});
afterAll(async () => {
  for (const t of twins ?? []) await t.close();
});

/** Methods whose requests carry a body to Fastify's parser (GET and HEAD never do). */
const CARRIES_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const label = (op: Operation) => `${op.method} ${op.path}`;

/** 18-digit chat ids fixed by operation, so the twins' agents and answers are the same. */
const fixedId = (role: number, n: number) => `3${role}${String(n).padStart(16, '0')}`;

/**
 * The same world on either twin, made through the API where it can be (the ids a sequence hands
 * out then agree): agents, an assigned report with a contact thread and a failed bot action, a failed
 * delivery, a started training session with a private trainer note.
 */
async function arrange(t: TestApp, n: number, op: Operation): Promise<Fixture> {
  const director = await signedIn(t, { chat_id: fixedId(1, n), name: `Director ${n}`, rank: 'Director', clearance: 5, allowlisted: true });
  const trainer = await signedIn(t, { chat_id: fixedId(2, n), name: `Trainer ${n}`, rank: 'Agent', clearance: 5, is_trainer: true });
  const trainee = await signedIn(t, { chat_id: fixedId(3, n), name: `Trainee ${n}`, rank: 'Agent', status: 'onboarding', clearance: 1 });
  const demoDirector = await signedIn(t, { chat_id: fixedId(4, n), name: `Demo ${n}`, env: 'demo', rank: 'Director', clearance: 5, allowlisted: true });
  const call = async (method: 'POST' | 'GET', url: string, headers: Record<string, string>, payload?: object) => {
    const res = await t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
    return res.json();
  };
  const reportId = `BODILESS-${n}`;
  await call('POST', '/reports/create', KEY, { report_id: reportId, reporter: fixedId(5, n), reported: fixedId(6, n), reason: 'Harassment', notes: 'n', evidence: 'e', assigned_agent: director.agent.chat_id });
  await call('POST', `/reports/${reportId}/action`, KEY, { action: 'contact_reporter', reason: 'Hello' });
  if (op.path.endsWith('/investigation/end')) await call('POST', `/reports/${reportId}/investigation/begin`, KEY);
  const { rows: actions } = await t.db.production.query<{ action_id: number }>(
    `update report_actions set status = 'failed', attempts = 3 where report_id = $1::text returning action_id`,
    [reportId],
  );
  const letter = (i: number) => String.fromCharCode(65 + (Math.floor(i) % 26));
  const punishmentId = `${letter(n)}${letter(n / 26)}${n % 10}${letter(n / 676)}Q${Math.floor(n / 10) % 10}`;
  const { rows: punishments } = await t.db.production.query(
    `insert into punishments (punishment_id, user_id, reason, report_id) values ($1::text, $2::text, 'Spawn killing', $3::text) returning *`,
    [punishmentId, fixedId(6, n), reportId],
  );
  const item = await makeItem(t, { punishment: punishments[0]!, status: 'failed', attempts: 3 });
  const session = (await call('POST', '/training/sessions', trainer.headers, { trainee_id: trainee.agent.chat_id, scenario_id: scenarios['first-response'] })).session.id;
  if (!op.path.endsWith('/start')) await call('POST', `/training/sessions/${session}/start`, trainer.headers);
  if (op.path.endsWith('/resume')) await call('POST', `/training/sessions/${session}/pause`, trainer.headers);
  const note = (await call('POST', `/training/sessions/${session}/notes`, trainer.headers, { body: 'Watch the chat log' })).note.id;
  const params: Record<string, string> = {
    report_id: reportId,
    action_id: String(actions[0]!.action_id),
    item_id: String(item.item_id),
    session_id: String(session),
    scenario_id: String(scenarios['ban-evasion']),
    key: 'witness',
    id: 'contact-reporter',
    note_id: String(note),
    chat_id: director.agent.chat_id,
    punishment_id: punishmentId,
  };
  return { director, trainer, demoDirector, params };
}

/** The credential that passes the operation's gates: the trainer in training, a demo session for the demo, else the Director (or the key where sessions are refused). */
function credentialFor(op: Operation, fixture: Fixture): Record<string, string> {
  if (op.path.startsWith('/training/')) return fixture.trainer.headers;
  if (op.path.startsWith('/demo/')) return fixture.demoDirector.headers;
  return op.security.includes('session') ? fixture.director.headers : KEY;
}

function urlOf(op: Operation, fixture: Fixture): string {
  return op.params.reduce((url, name) => url.replace(`{${name}}`, encodeURIComponent(fixture.params[name] ?? '1')), op.path);
}

/**
 * Every table's row count on both environments, in one statement each; report_counts by its total,
 * since each change lands on a slot chosen at random (migration 0007) and its rows differ by chance.
 */
async function rowCounts(t: TestApp): Promise<Record<string, number>[]> {
  const measure = (name: string) => (name === 'report_counts' ? 'coalesce(sum(n), 0)::int' : 'count(*)::int');
  const count = `select ${tables.map((name) => `(select ${measure(name)} from "${name}") as "${name}"`).join(', ')}`;
  return [(await t.db.production.query<Record<string, number>>(count)).rows[0]!, (await t.db.demo.query<Record<string, number>>(count)).rows[0]!];
}

// What the twins cannot share: the moment each answered.
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const CLOCK_FIELDS = new Set(['elapsed_ms']);
function normalise(value: unknown): unknown {
  if (typeof value === 'string') return ISO_TIME.test(value) ? '<time>' : value;
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, CLOCK_FIELDS.has(k) && typeof v === 'number' ? '<ms>' : normalise(v)]));
}
const answerOf = (res: { statusCode: number; body: string }) => ({ status: res.statusCode, body: res.body === '' ? '' : normalise(JSON.parse(res.body)) });

/** The header as clients write it, and a body with nothing in it: empty, or JSON whitespace only. */
const emptyJsonBody = fc.record({
  contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8'),
  body: fc.oneof({ arbitrary: fc.constant(''), weight: 2 }, { arbitrary: fc.string({ unit: fc.constantFrom(' ', '\t', '\r', '\n'), minLength: 1, maxLength: 6 }), weight: 1 }),
});

describe('an empty JSON body on an operation that takes none', () => {
  it('is answered exactly as the request without Content-Type, on every such operation of the document', { timeout: 300_000 }, async () => {
    const bodiless = operations.filter((op) => !op.hasBody && CARRIES_BODY.has(op.method));
    expect(bodiless.map(label)).toEqual(expect.arrayContaining([
      'POST /reports/{report_id}/viewed',
      'POST /reports/{report_id}/investigation/begin',
      'POST /actions/{action_id}/requeue',
      'POST /training/sessions/{session_id}/start',
      'POST /auth/logout',
    ]));
    const succeeded = new Set<string>();
    let sends = 0;
    for (const [n, op] of bodiless.entries()) {
      const fixtures = [await arrange(twins[0], n, op), await arrange(twins[1], n, op)];
      await fc.assert(
        fc.asyncProperty(emptyJsonBody, async ({ contentType, body }) => {
          const [a, b] = twins;
          // One request id for both: it is the correlation id of what they write and answer.
          const id = { 'x-request-id': `bodiless-${n}-${++sends}` };
          const sent = await a.app.inject({ method: op.method as 'POST', url: urlOf(op, fixtures[0]!), headers: { ...credentialFor(op, fixtures[0]!), ...id, 'content-type': contentType }, payload: body });
          const plain = await b.app.inject({ method: op.method as 'POST', url: urlOf(op, fixtures[1]!), headers: { ...credentialFor(op, fixtures[1]!), ...id } });
          const where = `${label(op)} with ${contentType} and ${JSON.stringify(body)}`;
          expect(answerOf(sent), where).toEqual(answerOf(plain));
          expect(await rowCounts(a), `${where}: what was written`).toEqual(await rowCounts(b));
          if (sent.statusCode < 300) succeeded.add(label(op));
        }),
        { seed: SEED, numRuns: 4, examples: [[{ contentType: 'application/json', body: '' }]] },
      );
    }
    // The comparison is not between two refusals: the fixtures let (nearly) every operation through.
    expect(bodiless.map(label).filter((l) => !succeeded.has(l))).toEqual([]);
  });
});

describe('an empty JSON body on an operation that takes one', () => {
  it('is 400 naming the body, as without Content-Type, after the gates, and writes nothing', { timeout: 120_000 }, async () => {
    const [t] = twins;
    const withBody = operations.filter((op) => op.hasBody);
    expect(withBody.length).toBeGreaterThan(30);
    let named = 0;
    for (const [n, op] of withBody.entries()) {
      // Every body is a JSON object: the message says so.
      const schema = op.bodySchema?.$ref ? components[op.bodySchema.$ref.replace('#/components/schemas/', '')] : op.bodySchema;
      expect(schema?.type, label(op)).toBe('object');
      const fixture = await arrange(t, 1000 + n, op);
      const url = urlOf(op, fixture);
      const before = await rowCounts(t);
      const refused = await t.app.inject({ method: op.method as 'POST', url, headers: { host: 'localhost', 'content-type': 'application/json' }, payload: '' });
      expect([refused.statusCode, refused.json().code], `${label(op)} without a credential: ${refused.body}`).toEqual([401, 'UNAUTHORIZED']);
      const empty = await t.app.inject({ method: op.method as 'POST', url, headers: { ...credentialFor(op, fixture), 'content-type': 'application/json' }, payload: '' });
      const plain = await t.app.inject({ method: op.method as 'POST', url, headers: credentialFor(op, fixture) });
      expect(empty.statusCode, `${label(op)}: ${empty.body}`).toBe(400);
      const answer = empty.json();
      // A route that reads a missing body as {} names its first required field instead (DELETE /reports: body.reason).
      expect(answer, label(op)).toEqual({ success: false, error: expect.stringMatching(/^body( is required: this operation takes a JSON object|\.\w+ is required)$/), code: 'VALIDATION_ERROR' });
      expect(plain.json(), label(op)).toEqual(answer);
      if (answer.error.startsWith('body is required')) named++;
      expect(await rowCounts(t), `${label(op)} was refused but wrote`).toEqual(before);
    }
    expect(named).toBeGreaterThan(withBody.length / 2);
  });

  it('is not taken for JSON when there is something in it, and an unknown route stays 404', async () => {
    const [t] = twins;
    const headers = { ...KEY, 'content-type': 'application/json' };
    for (const payload of [' x ', '\u00a0', '{']) {
      const res = await t.app.inject({ method: 'POST', url: '/reports/BODILESS-0/viewed', headers, payload });
      expect([res.statusCode, res.json()], JSON.stringify(payload)).toEqual([400, { success: false, error: 'Body is not valid JSON', code: 'VALIDATION_ERROR' }]);
    }
    const nowhere = await t.app.inject({ method: 'POST', url: '/no/such/route', headers, payload: '' });
    expect([nowhere.statusCode, nowhere.json()]).toEqual([404, { success: false, error: 'Route POST /no/such/route not found', code: 'NOT_FOUND' }]);
  });
});
