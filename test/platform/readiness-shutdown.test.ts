// GET /ready on the built service as a real process (issue 20): ready once up; from the moment
// SIGTERM arrives, 503 at once, while a request already in flight still completes.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, startService, withServiceDatabases, type Service } from '../helpers/service-process.js';
import { prepareDataDir, storeName, type TestDatabase } from '../helpers/stores.js';

const KEY = 'readiness-production-key-000000';

/** A raw HTTP/1.1 exchange: the request is sent in two parts, the second when `finish` is called. */
function splitRequest(port: number, head: string) {
  const socket = connect(port, '127.0.0.1');
  let data = '';
  socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(head);
  return {
    async finish(rest: string) {
      socket.write(rest);
      await closed;
      const [headers = '', body = ''] = data.split('\r\n\r\n');
      const [statusLine, ...fields] = headers.split('\r\n');
      return {
        status: Number(statusLine!.split(' ')[1]),
        headers: Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()])),
        body: body === '' ? undefined : (JSON.parse(body) as unknown),
      };
    },
  };
}

describe(`GET /ready across a shutdown on ${storeName}`, () => {
  let dataDir: string;
  let service: Service;
  const databases: TestDatabase[] = [];

  beforeAll(async () => {
    dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-ready-')));
    service = startService(await withServiceDatabases({ DATA_DIR: dataDir, PORT: String(await freePort()), PRODUCTION_API_KEY: KEY, LOG_LEVEL: 'info' }, databases));
    await service.ready;
  }, 120_000);

  afterAll(async () => {
    service?.child.kill('SIGKILL');
    for (const db of databases) await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is ready once up, then 503 at once after SIGTERM while an in-flight request still completes', async () => {
    const up = await fetch(`${service.url}/ready`);
    expect(up.status).toBe(200);
    // The built service names its release: package.json's version and the commit it was built from.
    const { version } = JSON.parse(await readFile(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
    expect(await up.json()).toEqual({ success: true, version, commit, environments: { production: 'ok', demo: 'ok' } });

    // A balancer's probe on a connection already open: its request begun, not yet complete.
    const probe = splitRequest(service.port, 'GET /ready HTTP/1.1\r\nHost: localhost\r\n');
    // And a request in flight: headers and the start of its body.
    const body = JSON.stringify({ date: 'Thu Jan 01 1970 00:00:00 GMT+0000 (UTC)' });
    let inFlightAnswered = false;
    let sendRest!: () => void;
    const inFlight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: service.port, method: 'POST', path: '/util/timestamp', headers: { authorization: KEY, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let data = '';
          res.on('data', (c: Buffer) => (data += c.toString()));
          res.on('end', () => {
            inFlightAnswered = true;
            resolve({ status: res.statusCode!, body: data });
          });
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      sendRest = () => req.end(body.slice(10));
    });
    await new Promise((resolve) => setTimeout(resolve, 200));

    service.child.kill('SIGTERM');
    await vi.waitFor(() => expect(service.logs.some((l) => l.includes('"signal":"SIGTERM"'))).toBe(true), { timeout: 5_000, interval: 10 });
    const started = performance.now();
    const notReady = await probe.finish('\r\n');
    expect(performance.now() - started).toBeLessThan(500);
    expect(notReady.status).toBe(503);
    expect(notReady.headers.connection).toBe('close');
    expect(notReady.body).toEqual({
      success: false,
      error: 'This instance is shutting down: retry on another',
      code: 'SHUTTING_DOWN',
      version,
      commit,
      environments: { production: 'shutting down', demo: 'shutting down' },
    });
    expect(inFlightAnswered).toBe(false);

    sendRest();
    expect(await inFlight).toEqual({ status: 200, body: JSON.stringify({ success: true, timestamp: 0 }) });
    expect(await service.exited).toBe(0);
  }, 30_000);
});
