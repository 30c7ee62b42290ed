// The built service as a real process: request ids in structured logs, one warning at boot on a
// Node past its end of life, a malformed config stopping the boot, and a graceful SIGTERM that
// lets an in-flight request finish.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { endOfLifeMessage, nodePastEndOfLife } from '../../src/platform/node-support.js';
import { freePort, startService, withServiceDatabases, type Service } from '../helpers/service-process.js';
import { prepareDataDir, storeName, type TestDatabase } from '../helpers/stores.js';

const KEY = 'lifecycle-production-key-000000';

/** The service's environment on `dataDir`, or on two fresh PostgreSQL databases (added to `databases` for dropping). */
async function serviceEnv(dataDir: string, databases: TestDatabase[]): Promise<Record<string, string>> {
  return withServiceDatabases({ DATA_DIR: dataDir, PORT: String(await freePort()), PRODUCTION_API_KEY: KEY, LOG_LEVEL: 'info' }, databases);
}

describe(`the service process on ${storeName}`, () => {
  let dataDir: string;
  let service: Service;
  const databases: TestDatabase[] = [];

  beforeAll(async () => {
    dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-life-')));
    const started = startService(await serviceEnv(dataDir, databases));
    await started.ready;
    service = started;
  }, 60_000);

  afterAll(async () => {
    service?.child.kill('SIGKILL');
    for (const db of databases) await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('honours an incoming x-request-id, echoes it, and logs it as structured JSON', async () => {
    const res = await fetch(`http://127.0.0.1:${service.port}/generate/case`, { headers: { authorization: KEY, 'x-request-id': 'trace-abc.123' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('trace-abc.123');
    const mine = () =>
      service.logs
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e.request_id === 'trace-abc.123');
    await vi.waitFor(() => expect(mine().map((e) => e.msg)).toEqual(['incoming request', 'request completed']), { timeout: 5000 });
    expect(mine()[1]).toMatchObject({ res: { statusCode: 200 } });
    expect(JSON.stringify(mine())).not.toContain(KEY);
  });

  it('mints a request id when the incoming one is not a sane token', async () => {
    const res = await fetch(`http://127.0.0.1:${service.port}/generate/case`, { headers: { authorization: KEY, 'x-request-id': 'bad id\twith spaces' } });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs one warning at boot, before it listens, when the Node running it is past its end of life (none on a supported one)', () => {
    const entries = service.logs.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const warnings = entries.filter((e) => String(e.msg).includes('past its end of life'));
    // The same Node as this test (startService spawns process.execPath), judged on the same day.
    const past = nodePastEndOfLife(process.versions.node, new Date());
    if (!past) return expect(warnings).toEqual([]);
    expect(warnings).toEqual([expect.objectContaining({ level: 40, node_version: process.version, end_of_life: past.endOfLife, msg: endOfLifeMessage(past) })]);
    expect(entries.indexOf(warnings[0]!)).toBeLessThan(entries.findIndex((e) => String(e.msg).startsWith('Server listening')));
  });

  it('on SIGTERM finishes the in-flight request, refuses new work, closes the databases and exits 0', async () => {
    const body = JSON.stringify({ date: 'Thu Jan 01 1970 00:00:00 GMT+0000 (UTC)' });
    // Send the headers and half the body, then signal, then the rest: the request is in flight.
    const inFlight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: service.port, method: 'POST', path: '/util/timestamp', headers: { authorization: KEY, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let data = '';
          res.on('data', (c: Buffer) => (data += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: data }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        service.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(10)), 300);
      }, 100);
    });
    const answered = await inFlight;
    expect(answered).toEqual({ status: 200, body: JSON.stringify({ success: true, timestamp: 0 }) });
    expect(await service.exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${service.port}/`)).rejects.toThrow();
    expect(service.logs.some((l) => l.includes('"signal":"SIGTERM"'))).toBe(true);
    // Databases closed cleanly: the embedded folder locks are gone.
    expect(existsSync(join(dataDir, 'production.lock'))).toBe(false);
    expect(existsSync(join(dataDir, 'demo.lock'))).toBe(false);
  });
});

describe('a shutdown past its grace period', () => {
  it('cuts the connections still open, says how many, and still exits 0', async () => {
    const dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-grace-')));
    const databases: TestDatabase[] = [];
    const service = startService({ ...(await serviceEnv(dataDir, databases)), SHUTDOWN_GRACE_SECONDS: '1' });
    try {
      await service.ready;
      // An upload that never finishes: headers and a tenth of the body, then nothing.
      const cut = new Promise<string>((resolve) => {
        const req = httpRequest({ host: '127.0.0.1', port: service.port, method: 'POST', path: '/util/timestamp', headers: { authorization: KEY, 'content-type': 'application/json', 'content-length': 1000 } });
        req.on('error', (err) => resolve(err.message));
        req.on('response', (res) => resolve(`answered ${res.statusCode}`));
        req.write('{"date":');
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const signalled = Date.now();
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(1000);
      expect(await cut).toMatch(/socket hang up|ECONNRESET/);
      expect(service.logs.some((l) => l.includes('cutting 1 open connection(s)'))).toBe(true);
      expect(existsSync(join(dataDir, 'production.lock'))).toBe(false);
    } finally {
      service.child.kill('SIGKILL');
      for (const db of databases) await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('a malformed configuration', () => {
  it('stops the boot with a message naming each bad variable', async () => {
    const service = startService({ PORT: 'eighty', PRODUCTION_DATABASE_URL: 'mysql://x', DATA_DIR: ':memory:' });
    service.ready.catch(() => undefined);
    expect(await service.exited).toBe(1);
    const output = service.logs.join('\n');
    expect(output).toContain('PORT: expected an integer from 0 to 65535 (got "eighty")');
    // A database URL may carry a password: the report never quotes one it cannot take apart.
    expect(output).toContain('PRODUCTION_DATABASE_URL: expected a postgres:// connection URL (got [redacted])');
    expect(output).not.toContain('mysql://x');
  });
});
