// METRICS_PORT as the operator sets it (issue 20), on the built service (dist/src/server.js): unset,
// the process listens on PORT alone; set, on PORT and METRICS_PORT, the second serving GET
// /metrics; SIGTERM closes both and the process exits 0. The listening sockets are read from
// /proc (this process's socket inodes against the kernel's table of listening TCP sockets).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answering, freePort, startService, type Service } from './helpers/service-process.js';
import { parse, value } from './helpers/metrics.js';
import { createTestDatabase, databaseEnv, onPostgres, prepareDataDir, type TestDatabase } from './helpers/stores.js';
import { ConfigError, parseConfig } from '../src/config.js';

const KEY = 'metrics-listener-production-key-000';

/** The TCP ports `pid` listens on. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // st 0A: LISTEN; local address is ip:port in hex; the inode is the tenth field.
      if (fields[3] === '0A' && inodes.has(fields[9]!)) ports.push(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports.sort((a, b) => a - b);
}

describe('METRICS_PORT in the configuration', () => {
  const problems = (env: Record<string, string>) => {
    try {
      parseConfig(env);
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };

  it('is off by default, a port when set, and refused when malformed or the public port itself', () => {
    expect(parseConfig({}).metricsPort).toBeUndefined();
    expect(parseConfig({ METRICS_PORT: '9464' }).metricsPort).toBe(9464);
    expect(problems({ METRICS_PORT: 'metrics' })).toEqual(['METRICS_PORT: expected an integer from 0 to 65535 (got "metrics")']);
    expect(problems({ METRICS_PORT: '70000' })).toEqual(['METRICS_PORT: expected an integer from 0 to 65535 (got "70000")']);
    expect(problems({ PORT: '8080', METRICS_PORT: '8080' })).toEqual(['METRICS_PORT, PORT: metrics need a port of their own, never the public one']);
  });
});

describe('the METRICS_PORT listener of the service process', () => {
  const databases: TestDatabase[] = [];
  const services: Service[] = [];
  const dataDirs: string[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { PRODUCTION_API_KEY: KEY, DEMO_API_KEY: `${KEY}-demo`, LOG_LEVEL: 'warn', HOST: '127.0.0.1' };
    if (onPostgres) {
      const [production, demo] = [await createTestDatabase(), await createTestDatabase()];
      databases.push(production, demo);
      Object.assign(env, databaseEnv('PRODUCTION', production), databaseEnv('DEMO', demo));
    }
  }, 60_000);

  afterAll(async () => {
    for (const service of services) service.child.kill('SIGKILL');
    await Promise.all(services.map((s) => s.exited));
    for (const database of databases) await database.drop();
    await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  async function start(extra: Record<string, string>): Promise<Service> {
    const dataDir = await prepareDataDir(await mkdtemp(join(tmpdir(), 'cms-metrics-listener-')));
    dataDirs.push(dataDir);
    const service = startService({ ...env, DATA_DIR: dataDir, PORT: String(await freePort()), ...extra });
    services.push(service);
    await answering(service, 150_000);
    return service;
  }

  it('unset: one listener, PORT, and no /metrics on it', { timeout: 300_000 }, async () => {
    const service = await start({});
    expect(listeningPorts(service.child.pid!)).toEqual([service.port]);
    const res = await fetch(`${service.url}/metrics`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, 'NOT_FOUND']);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });

  it('set: PORT and METRICS_PORT, the second serving the requests made on the first; SIGTERM closes both, exit 0', { timeout: 300_000 }, async () => {
    const metricsPort = await freePort();
    const service = await start({ METRICS_PORT: String(metricsPort) });
    await expect.poll(() => listeningPorts(service.child.pid!)).toEqual([service.port, metricsPort].sort((a, b) => a - b));
    for (let i = 0; i < 3; i++) expect((await fetch(`${service.url}/agents`, { headers: { authorization: KEY } })).status).toBe(200);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    const families = parse(await res.text());
    expect(value(families, 'cms_http_requests_total', { environment: 'production', method: 'GET', route: '/agents', status_class: '2xx' })).toBe(3);
    expect(value(families, 'cms_db_pool_size', { environment: 'demo' })).toBeGreaterThanOrEqual(1);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/agents`, { headers: { authorization: KEY } })).status).toBe(404);

    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${metricsPort}/metrics`)).rejects.toThrow();
  });
});
