// Who may touch an existing training session (spec Training center: "Controls require being the
// assigned trainer"; Errors: 403 assignment, 404 unknown resource; issue 19). Every operation on
// /training/sessions/{session_id} in /openapi.json, sent a request it would accept: another trainer
// (a Director with clearance 5) gets 403 NOT_SESSION_TRAINER on the trainer's routes and 403
// NOT_SESSION_MEMBER on the participants' (the read included); the trainee gets NOT_SESSION_TRAINER
// on the trainer's; an id no session has is 404 for everyone. Nothing is written or broadcast.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';
import { createSession, importDemoScenarios, newTrainee, newTrainer, post, RecordingBroadcaster } from './helpers/training.js';

interface Operation {
  method: 'GET' | 'POST';
  path: string;
  params: string[];
}

/** The participants' routes (spec: "participant"); every other one is the assigned trainer's. */
const PARTICIPANT_ROUTES = new Set(['GET /training/sessions/{session_id}', 'POST /training/sessions/{session_id}/events', 'POST /training/sessions/{session_id}/notes']);

/** A body each route accepts, so that what answers is the access rule and not validation. */
const BODIES: Record<string, unknown> = {
  '/training/sessions/{session_id}/events': { type: 'ADD_FINDING' },
  '/training/sessions/{session_id}/notes': { body: 'Remember the witness' },
  '/training/sessions/{session_id}/inject': { type: 'custom_message', content: 'The reporter sent a new screenshot' },
  '/training/sessions/{session_id}/evaluate': { score: 80, result: 'pass' },
};

const broadcaster = new RecordingBroadcaster();
let t: TestApp;
let trainer: Person;
let trainee: Person;
let director: Person;
let sessionId: number;
let operations: Operation[];
let tables: string[];
const params: Record<string, string> = { key: 'chat-log', id: 'read-log' };

beforeAll(async () => {
  t = await createTestApp({ broadcaster });
  const scenarios = await importDemoScenarios(t.db.production);
  trainer = await newTrainer(t);
  trainee = await newTrainee(t);
  // Every permission there is, trainer flag included; just not this session's trainer.
  director = await signedIn(t, { rank: 'Director', clearance: 5, is_trainer: true, allowlisted: true, name: 'Dana Director' });
  sessionId = await createSession(t, trainer, trainee, scenarios['first-response']);
  expect((await post(t, `/training/sessions/${sessionId}/start`, trainer)).statusCode).toBe(200);
  const note = await post(t, `/training/sessions/${sessionId}/notes`, trainer, { body: 'Private until released' });
  params.note_id = String(note.json().note.id);
  params.scenario_id = String(scenarios['ban-evasion']);
  const doc = (await t.app.inject({ url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
  };
  operations = Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/training/sessions/{session_id}'))
    .flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        method: method.toUpperCase() as Operation['method'],
        path,
        params: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
      })),
    );
  const { rows } = await t.db.production.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = 'public' order by 1`);
  tables = rows.map((r) => r.name);
  broadcaster.take();
});
afterAll(() => t.close());

/** A digest of every row of every table: any insert, update or delete changes it. */
async function everything(): Promise<Record<string, string>> {
  const { rows } = await t.db.production.query<Record<string, string>>(
    `select ${tables.map((name) => `(select md5(coalesce(string_agg(x::text, ',' order by x::text), '')) from "${name}" x) as "${name}"`).join(', ')}`,
  );
  return rows[0]!;
}

const label = (op: Operation) => `${op.method} ${op.path}`;

function send(op: Operation, person: Person, id = sessionId) {
  const url = op.params.reduce((u, name) => u.replace(`{${name}}`, name === 'session_id' ? String(id) : params[name]!), op.path);
  const body = BODIES[op.path];
  return t.app.inject({ method: op.method, url, headers: person.headers, ...(body === undefined ? {} : { payload: body as object }) });
}

const refusal = (code: 'NOT_SESSION_TRAINER' | 'NOT_SESSION_MEMBER') => ({
  success: false,
  error: code === 'NOT_SESSION_TRAINER' ? 'Only the assigned trainer may do this' : 'Only the trainer and the trainee of this session may do this',
  code,
});

describe('access to an existing training session', () => {
  it('covers every session operation of the OpenAPI document: the read, the participants’ and all the trainer’s', () => {
    const names = operations.map(label);
    for (const control of ['start', 'pause', 'resume', 'restart', 'reset', 'end', 'abort']) expect(names).toContain(`POST /training/sessions/{session_id}/${control}`);
    for (const route of PARTICIPANT_ROUTES) expect(names).toContain(route);
    expect(names).toEqual(expect.arrayContaining([
      'POST /training/sessions/{session_id}/evaluate',
      'POST /training/sessions/{session_id}/inject',
      'POST /training/sessions/{session_id}/scenarios/{scenario_id}/activate',
      'POST /training/sessions/{session_id}/evidence/{key}/release',
      'POST /training/sessions/{session_id}/objectives/{id}/complete',
      'POST /training/sessions/{session_id}/notes/{note_id}/release',
    ]));
    // A new session route fails here until it is placed: a participants' route or the trainer's.
    expect(operations.length).toBe(18);
  });

  it('another trainer with clearance 5: 403 NOT_SESSION_TRAINER on every trainer route, NOT_SESSION_MEMBER on the read and the participants’ routes; nothing written', async () => {
    const before = await everything();
    for (const op of operations) {
      const res = await send(op, director);
      const code = PARTICIPANT_ROUTES.has(label(op)) ? 'NOT_SESSION_MEMBER' : 'NOT_SESSION_TRAINER';
      expect([res.statusCode, res.json()], label(op)).toEqual([403, refusal(code)]);
    }
    expect(await everything()).toEqual(before);
    expect(broadcaster.take()).toEqual([]);
  });

  it('the trainee: 403 NOT_SESSION_TRAINER on every trainer route; nothing written', async () => {
    const before = await everything();
    for (const op of operations.filter((o) => !PARTICIPANT_ROUTES.has(label(o)))) {
      const res = await send(op, trainee);
      expect([res.statusCode, res.json()], label(op)).toEqual([403, refusal('NOT_SESSION_TRAINER')]);
    }
    expect(await everything()).toEqual(before);
    expect(broadcaster.take()).toEqual([]);
  });

  it('an agent who does not train gets the same refusals: NOT_SESSION_MEMBER on the read, NOT_SESSION_TRAINER on a control', async () => {
    const agent = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const read = await send(operations.find((o) => o.method === 'GET')!, agent);
    expect([read.statusCode, read.json()]).toEqual([403, refusal('NOT_SESSION_MEMBER')]);
    const pause = await send(operations.find((o) => o.path.endsWith('/pause'))!, agent);
    expect([pause.statusCode, pause.json().code]).toEqual([403, 'NOT_SESSION_TRAINER']);
  });

  it('an id no session has: 404 on every route, for a trainer and for the trainee', async () => {
    const missing = sessionId + 1_000_000;
    const before = await everything();
    for (const op of operations) {
      for (const person of [director, trainer, trainee]) {
        const res = await send(op, person, missing);
        expect([res.statusCode, res.json()], `${label(op)} as ${person.agent.name}`).toEqual([
          404,
          { success: false, error: `Training session ${missing} not found`, code: 'NOT_FOUND' },
        ]);
      }
    }
    expect(await everything()).toEqual(before);
  });

  it('the assigned trainer is let through the same requests (what refused them was the access rule)', async () => {
    const read = await send(operations.find((o) => o.method === 'GET')!, trainer);
    expect([read.statusCode, read.json().role]).toEqual([200, 'trainer']);
    const pause = await send(operations.find((o) => o.path.endsWith('/pause'))!, trainer);
    expect([pause.statusCode, pause.json()]).toEqual([200, { success: true }]);
    const evaluate = await send(operations.find((o) => o.path.endsWith('/evaluate'))!, trainer);
    expect([evaluate.statusCode, evaluate.json().session.status]).toEqual([200, 'completed']);
  });
});
