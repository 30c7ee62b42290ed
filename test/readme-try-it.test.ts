// README.md's "Try it", run as a newcomer runs it: the start command's variables on the built
// service (`npm start` is `npm run build && node dist/src/server.js`; `npm test` builds first),
// then each curl line of the README through a shell, with curl itself. The test changes only what
// a test must: the port (and the data folder, migrated already, or the PostgreSQL databases on that
// store).
// With TRY_IT_URL set (.ci/smoke) it starts nothing: it asks the service the README's own start
// line is already running at that address.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_AGENTS } from '../src/demo/seed.js';
import { freePort, startService, withServiceDatabases, type Service } from './helpers/service-process.js';
import { prepareDataDir, storeName, type TestDatabase } from './helpers/stores.js';

const ROOT = join(import.meta.dirname, '..');
const README_PORT = '3000';

interface TryIt {
  start: string;
  startEnv: Record<string, string>;
  curls: string[];
  text: string;
}

/** The "Try it" part of the README: its two shell blocks (start, curls) and its prose. */
async function readTryIt(): Promise<TryIt> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const from = readme.indexOf('**Try it.**');
  expect(from, 'README.md has a "Try it"').toBeGreaterThan(0);
  const section = readme.slice(from, readme.indexOf('\n## ', from));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim().split('\n'));
  const [startBlock, curlBlock] = blocks;
  expect(startBlock).toHaveLength(1);
  const start = startBlock![0]!;
  const words = start.split(/\s+/);
  const assignments = words.slice(0, words.indexOf('npm'));
  expect(words.slice(assignments.length)).toEqual(['npm', 'start']);
  const startEnv = Object.fromEntries(assignments.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
  return { start, startEnv, curls: curlBlock!, text: section };
}

/** One README line through the shell, on the test's port; curl reports the status after the body. */
function runCurl(line: string, port: number): Promise<{ status: number; body: string }> {
  const command = `${line.replaceAll(`127.0.0.1:${README_PORT}`, `127.0.0.1:${port}`)} --silent --show-error --write-out '\\n%{http_code}'`;
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', command], { env: { PATH: process.env.PATH ?? '' } }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${command}: ${stderr || err.message}`));
      const cut = stdout.lastIndexOf('\n');
      resolve({ status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
    });
  });
}

/** A GET with a Host header of our choosing (fetch does not let one be set). */
function get(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const RUNNING = process.env.TRY_IT_URL ? new URL(process.env.TRY_IT_URL) : undefined;
// The README's calls go to 127.0.0.1 on a port of their own: a TRY_IT_URL elsewhere would test nothing.
if (RUNNING && (RUNNING.hostname !== '127.0.0.1' || RUNNING.port === '')) throw new Error(`TRY_IT_URL must be http://127.0.0.1:<port> (got ${RUNNING.href})`);

describe(`README "Try it" on ${RUNNING ? `the service at ${RUNNING.host}` : storeName}`, () => {
  let tryIt: TryIt;
  let service: Service | undefined;
  let dataDir: string | undefined;
  let port: number;
  const databases: TestDatabase[] = [];

  beforeAll(async () => {
    tryIt = await readTryIt();
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe('npm run build && node dist/src/server.js');
    if (RUNNING) {
      port = Number(RUNNING.port);
      return;
    }
    // Migrated data folders to start on (PostgreSQL: empty databases): the seed is still the service's own
    // first start; a first start from nothing, initdb and every migration, is .ci/smoke's.
    dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-tryit-')));
    service = startService(await withServiceDatabases({ ...tryIt.startEnv, PORT: String(await freePort()), DATA_DIR: dataDir, LOG_LEVEL: 'info' }, databases));
    await service.ready;
    port = service.port;
  }, 120_000);

  afterAll(async () => {
    service?.child.kill('SIGKILL');
    await service?.exited;
    for (const db of databases) await db.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('GET / is the health probe and GET /ready names the release and both environments', async () => {
    const root = await get(port, '/', { host: '127.0.0.1' });
    expect(root).toEqual({ status: 200, body: 'Case Management Service API Online' });
    const ready = await get(port, '/ready', { host: '127.0.0.1' });
    expect(ready.status).toBe(200);
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(JSON.parse(ready.body)).toMatchObject({ success: true, version: pkg.version, environments: { production: 'ok', demo: 'ok' } });
  });

  it('starts the demo with a local API key and nothing else', () => {
    expect(Object.keys(tryIt.startEnv)).toEqual(['DEMO_API_KEY']);
    expect(tryIt.curls).toHaveLength(3);
    for (const line of tryIt.curls) {
      expect(line).toMatch(/^curl -H 'Host: demo\.localhost' -H 'Authorization: ([^']+)' http:\/\/127\.0\.0\.1:3000\/\S+$/);
      expect(line).toContain(`'Authorization: ${tryIt.startEnv.DEMO_API_KEY}'`);
    }
  });

  it('the first curl lists the 13 fictional agents', async () => {
    const { status, body } = await runCurl(tryIt.curls[0]!, port);
    expect(status).toBe(200);
    const { success, agents } = JSON.parse(body) as { success: boolean; agents: { chat_id: string; name: string }[] };
    expect(success).toBe(true);
    expect(agents.map((a) => a.name).sort()).toEqual(DEMO_AGENTS.map((a) => a.name).sort());
    expect(tryIt.text).toContain(`The ${DEMO_AGENTS.length} fictional agents`);
  });

  it('the second shows a case under investigation with its notes, evidence and timeline', async () => {
    const { status, body } = await runCurl(tryIt.curls[1]!, port);
    expect(status).toBe(200);
    const { report } = JSON.parse(body);
    expect(report).toMatchObject({ report_id: 'SVC-CASE-48150', status: 'Under Investigation', reported_name: 'Drift_King' });
    expect(report.assigned_agent_name).toBe('Jordan Pike');
    expect(report.notes_list.map((n: { note: string }) => n.note)).toContain('Pulled the server log for the 21:40 pursuit; three rams in under a minute.');
    expect(report.evidence_list.map((e: { url: string }) => e.url)).toContain('https://evidence.example.org/clips/48150-ram3.mp4');
    expect(report.timeline.map((e: { event: string }) => e.event)).toContain('Investigation started: pursuit footage received');
  });

  it("the third shows the bot's pending work", async () => {
    const { status, body } = await runCurl(tryIt.curls[2]!, port);
    expect(status).toBe(200);
    const { count, actions } = JSON.parse(body) as { count: number; actions: { report_id: string; action: string; status: string }[] };
    expect(count).toBe(actions.length);
    expect(actions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ report_id: 'SVC-CASE-48150', status: 'pending' }),
        expect.objectContaining({ report_id: 'SVC-CASE-47877', status: 'processing' }),
      ]),
    );
  });

  it('/docs on the demo host, with the key in "Authorize" as the Authorization header', async () => {
    expect(tryIt.text).toContain('http://demo.localhost:3000/docs');
    expect(tryIt.text).toContain(`enter\n\`${tryIt.startEnv.DEMO_API_KEY}\` as \`apiKey\``);
    const demo = { host: 'demo.localhost' };
    const docs = await get(port, '/docs/', demo);
    expect(docs.status).toBe(200);
    expect(docs.body).toContain('swagger-ui');
    const doc = JSON.parse((await get(port, '/openapi.json', demo)).body);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorization' });
    expect(doc.paths['/agents'].get.security).toContainEqual({ apiKey: [] });
    // What "Try it out" sends once authorized: the key as the whole header, on the page's host.
    const key = tryIt.startEnv.DEMO_API_KEY!;
    expect((await get(port, '/agents', { ...demo, authorization: key })).status).toBe(200);
    // Production, which the README says has no key yet, refuses it.
    expect((await get(port, '/agents', { host: '127.0.0.1', authorization: key })).status).toBe(401);
  });
});
