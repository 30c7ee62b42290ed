// A typed client as integrators build one (issue 31): openapi-typescript generates types from the
// running service's /openapi.json, TypeScript 5.9 type-checks README.md's "Clients" program against
// them under `strict` (both from the clients/typescript workspace: openapi-typescript needs the
// TypeScript 5 compiler API), and the compiled program runs against the service: the bot's loop
// and a dashboard's calls. A route whose schema stops matching its answers, or whose types stop
// allowing the natural call, fails here. The demo answers on 127.0.0.1 (DEMO_HOSTS) so that the
// program needs no Host header; its local sign-in is on (DEMO_LOCAL_SIGNIN).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { player, startRelay, type StandInRelay } from '../../bench/lib/game-relay.js';
import { createTestApp, DEMO_KEY, type TestApp } from '../helpers/app.js';
import { DIRECTOR, postLocal, sessionCookieOf } from '../helpers/local-signin.js';
import { mismatches, recordExchanges, type OpenApiDocument } from '../helpers/openapi-answers.js';
import { listen } from '../helpers/realtime.js';

const ROOT = join(import.meta.dirname, '../..');
const WORKSPACE = join(ROOT, 'clients/typescript/node_modules');
const HOST = '127.0.0.1';
const key = { host: HOST, authorization: DEMO_KEY };
const GAME_USER = 1843209911;

/** What README's program exports, as the test calls it (its own types are checked by TypeScript 5.9 below). */
interface Program {
  runBot(baseUrl: string, apiKey: string, gameUserId: string): Promise<{ actions: number[]; deliveries: number[]; online: boolean; username: string | null }>;
  runDashboard(baseUrl: string, chatId: string): Promise<{ total?: number; reportId: string | null; noteId?: number; audit?: string[] }>;
}

/** The program under README.md's "## Clients" heading: its first ts block, exactly. */
async function readmeProgram(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const from = readme.indexOf('\n## Clients\n');
  expect(from, 'README.md has a "## Clients" section').toBeGreaterThan(0);
  const section = readme.slice(from + 1, readme.indexOf('\n## ', from + 1));
  const block = /\n```ts\n([\s\S]*?)\n```\n/.exec(section);
  expect(block, 'the section has a ts block').not.toBeNull();
  return block![1]!;
}

// Calls the program may not make, each marked: an unused @ts-expect-error is itself an error, so
// this proves the generated types constrain paths, parameters and bodies (they are not `any`).
const MISUSE = `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';
const api = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000' });
// @ts-expect-error: no such route
void api.GET('/actions/nxt');
// @ts-expect-error: a result is success or failed
void api.POST('/actions/{action_id}/complete', { params: { path: { action_id: 1 } }, body: { result: 'done' } });
// @ts-expect-error: the action id is a number
void api.POST('/actions/{action_id}/complete', { params: { path: { action_id: '1' } }, body: { result: 'success' } });
// @ts-expect-error: no such report status
void api.GET('/reports', { params: { query: { status: 'Closed' } } });
// @ts-expect-error: a note needs its text
void api.POST('/reports/{report_id}/notes', { params: { path: { report_id: 'R-1' } }, body: {} });
export async function noteOf(id: string): Promise<string | undefined> {
  const { data } = await api.GET('/reports/{report_id}', { params: { path: { report_id: id } } });
  // @ts-expect-error: notes_list holds objects, not strings
  const first: string | undefined = data?.report.notes_list[0];
  return first;
}
`;

/** A tool of the clients/typescript workspace on Node (the one running the suite): its exit code and output. */
function run(script: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(WORKSPACE, script), ...args], { cwd }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}`.trim() });
    });
  });
}

describe('a typed client generated from /openapi.json', () => {
  let t: TestApp;
  let relay: StandInRelay;
  let base: string;
  let dir: string;
  let compiled: { code: number; output: string };
  let doc: OpenApiDocument;

  beforeAll(async () => {
    relay = await startRelay({ body: [player('Someone', 5), player('NightOwl_88', GAME_USER, { Team: 'Police' })] });
    t = await createTestApp({
      env: { DEMO_LOCAL_SIGNIN: 'true', DEMO_HOSTS: HOST, PRODUCTION_HOSTS: 'localhost', GAME_RELAY_URLS: relay.url, GAME_SERVER_KEY: 'srv-key' },
    });
    base = await listen(t);
    doc = (await (await fetch(`${base}/openapi.json`)).json()) as OpenApiDocument;
    // A project of the integrator's: the program, the generated types and node_modules with
    // openapi-fetch and @types/node (the repository's), as ESM under strict.
    dir = await mkdtemp(join(tmpdir(), 'cms-typed-client-'));
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const compilerOptions = {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023'], types: ['node'],
      strict: true, noUncheckedIndexedAccess: true, skipLibCheck: true, noEmitOnError: true, outDir: 'out',
    };
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['client.ts', 'misuse.ts'] }));
    await writeFile(join(dir, 'client.ts'), await readmeProgram());
    await writeFile(join(dir, 'misuse.ts'), MISUSE);
    const generated = await run('openapi-typescript/bin/cli.js', [`${base}/openapi.json`, '-o', 'schema.d.ts'], dir);
    expect(generated.code, generated.output).toBe(0);
    compiled = await run('typescript/bin/tsc', ['-p', '.'], dir);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await relay?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('type-checks the README program under strict, and the types refuse the wrong calls', async () => {
    expect(compiled.output).toBe('');
    expect(compiled.code).toBe(0);
    const schema = await readFile(join(dir, 'schema.d.ts'), 'utf8');
    expect(schema).toContain('"/actions/{action_id}/complete": {');
  });

  it("runs the bot's loop and a dashboard's calls against the service: what they answer is what was written", async () => {
    // The work the bot finds: an investigation begun through the key (a report action), and a
    // punishment issued from a Director's session (a discipline delivery). The reported user's
    // profile is on record, so the issue asks for no user lookup.
    const reportId = `TC-${process.pid}`;
    const reported = '733019458821664999';
    const create = await t.app.inject({
      method: 'POST', url: '/reports/create', headers: key,
      payload: { report_id: reportId, reporter: '733019458821664000', reported, reason: 'Ramming police vehicles', notes: 'n', evidence: 'e', assigned_agent: DIRECTOR },
    });
    expect(create.statusCode).toBe(201);
    const profiles = { reported: { chat_id: reported, username: 'rammer' } };
    expect((await t.app.inject({ method: 'POST', url: `/reports/${reportId}/chat-profiles`, headers: key, payload: profiles })).statusCode).toBe(200);
    const begun = await t.app.inject({ method: 'POST', url: `/reports/${reportId}/action`, headers: key, payload: { action: 'investigate', reason: 'Footage received' } });
    expect(begun.statusCode).toBe(200);
    const director = { host: HOST, cookie: sessionCookieOf(await postLocal(t.app, { chat_id: DIRECTOR }, { host: HOST })) };
    const issued = await t.app.inject({ method: 'POST', url: '/punishments', headers: director, payload: { user_id: reported, reason: 'Ramming', duration: '1d', report_id: reportId } });
    expect(issued.statusCode).toBe(201);
    const db = t.db.demo;
    const { rows: queued } = await db.query<{ action_id: number }>(`select action_id from report_actions where report_id = $1::text and status = 'pending'`, [reportId]);
    const { rows: due } = await db.query<{ item_id: number; kind: string }>(`select item_id, kind from discipline_deliveries where user_id = $1::text`, [reported]);
    expect(queued).toHaveLength(1);
    expect(due.map((d) => d.kind)).toEqual(['issue']);

    const program = (await import(pathToFileURL(join(dir, 'out/client.js')).href)) as Program;
    const recording = recordExchanges(base);
    const bot = await program.runBot(base, DEMO_KEY, String(GAME_USER));
    const dashboard = await program.runDashboard(base, DIRECTOR).finally(() => recording.stop());
    // Every answer the program got is one the document (and so the generated types) describes.
    expect(mismatches(doc, recording.exchanges)).toEqual([]);
    expect(new Set(recording.exchanges.map((e) => `${e.method} ${e.status}`))).toEqual(new Set(['GET 200', 'GET 204', 'POST 200', 'POST 201', 'POST 303']));

    expect(bot.actions).toContain(queued[0]!.action_id);
    expect(bot.deliveries).toContain(due[0]!.item_id);
    expect(bot).toMatchObject({ online: true, username: 'NightOwl_88' });
    expect(relay.keys.at(-1)).toBe('srv-key');
    // Each one it handled is completed as it said, and nothing it could claim is left.
    const { rows: actions } = await db.query<{ action_id: number; status: string; result_note: string }>(
      'select action_id, status, result_note from report_actions where action_id = any($1::bigint[]) order by action_id',
      [bot.actions],
    );
    expect(actions.map((a) => a.action_id)).toEqual([...bot.actions].sort((a, b) => a - b));
    expect(actions.every((a) => a.status === 'success' && a.result_note.endsWith(' done'))).toBe(true);
    const { rows: items } = await db.query<{ item_id: number; status: string; ref: string }>(
      'select item_id, status, ref from discipline_deliveries where item_id = any($1::bigint[]) order by item_id',
      [bot.deliveries],
    );
    expect(items).toEqual([...bot.deliveries].sort((a, b) => a - b).map((id) => ({ item_id: id, status: 'success', ref: `dm-${id}` })));
    const { rows: left } = await db.query<{ n: number }>(
      `select (select count(*) from report_actions where status = 'pending')::int
            + (select count(*) from discipline_deliveries where status = 'pending' and available_at <= now())::int as n`,
    );
    expect(left[0]!.n).toBe(0);

    expect(dashboard).toMatchObject({ reportId, total: expect.any(Number) });
    const { rows: notes } = await db.query<{ id: number; note: string; author_chat_id: string }>(
      'select id, note, author_chat_id from report_notes where report_id = $1::text',
      [reportId],
    );
    expect(notes).toEqual([{ id: dashboard.noteId, note: expect.stringMatching(/^Read 0 evidence items, \d+ timeline entries\.$/), author_chat_id: DIRECTOR }]);
    // The audit search answered the report's events, oldest first, the note last.
    const { rows: events } = await db.query<{ type: string }>(
      `select type from events where report_id = $1::text and (type like 'report.%' or type like 'queue.%') order by id`,
      [reportId],
    );
    expect(dashboard.audit).toEqual(events.map((e) => e.type));
    expect(dashboard.audit).toEqual(['report.created', 'report.status_changed', 'queue.action_completed', 'report.note_added']);
  });

  it('checks answers against the document: an undeclared status, a wrong member or a body where none is declared is reported', () => {
    const action = (over: object) => JSON.stringify({ success: true, action: { action_id: 1, kind: 'investigate', ...over } });
    expect(mismatches(doc, [
      { method: 'GET', path: '/actions/next', status: 418, body: '' },
      { method: 'GET', path: '/actions/next', status: 200, body: action({ action_id: 'one' }) },
      { method: 'GET', path: '/actions/next', status: 204, body: '{}' },
      { method: 'POST', path: '/actions/7/complete', status: 404, body: JSON.stringify({ success: false, error: 'Action 7 not found', code: 'ACTION_NOT_FOUND' }) },
    ])).toEqual([
      'GET /actions/next 418: status not declared for GET /actions/next',
      expect.stringMatching(/^GET \/actions\/next 200: .*data\/action\/action_id must be integer/),
      'GET /actions/next 204: a body where none is declared',
    ]);
  });
});
