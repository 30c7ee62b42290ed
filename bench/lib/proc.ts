import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { trackChild } from './cleanup.js';

export interface Child {
  label: string;
  proc: ChildProcess;
  pid: number;
  port: number;
  url: string;
  /** performance.now() just before spawn. */
  spawnedAt: number;
  tail(): string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** `undefined` values remove variables inherited from the harness's environment. */
export async function spawnNode(label: string, script: string, env: Record<string, string | undefined>): Promise<Child> {
  const port = Number(env.PORT ?? (await freePort()));
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const lines: string[] = [];
  const keep = (chunk: Buffer): void => {
    lines.push(...chunk.toString('utf8').split('\n').filter((l) => l.length > 0));
    if (lines.length > 60) lines.splice(0, lines.length - 60);
  };
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, [script], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(proc);
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  if (proc.pid === undefined) throw new Error(`${label}: spawn failed`);
  return { label, proc, pid: proc.pid, port, url: `http://127.0.0.1:${port}`, spawnedAt, tail: () => lines.join('\n') };
}

/** One request on a fresh connection, so no keep-alive socket delays the child's graceful close. */
export function httpGet(url: string, headers: Record<string, string> = {}, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { connection: 'close', ...headers }, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

function exited(child: Child): boolean {
  return child.proc.exitCode !== null || child.proc.signalCode !== null;
}

/** Polls GET / until it answers 200 with `expect` in the body; returns ms since spawn. */
export async function waitReady(child: Child, expect: string, timeoutMs = 60_000): Promise<number> {
  const deadline = child.spawnedAt + timeoutMs;
  while (performance.now() < deadline) {
    if (exited(child)) {
      throw new Error(`${child.label} exited (code ${child.proc.exitCode}, signal ${child.proc.signalCode}) before ready:\n${child.tail()}`);
    }
    try {
      const res = await httpGet(`${child.url}/`, {}, 1000);
      if (res.status === 200 && res.body.includes(expect)) return performance.now() - child.spawnedAt;
    } catch {
      // not listening yet
    }
    await sleep(10);
  }
  throw new Error(`${child.label} not ready after ${timeoutMs / 1000} s:\n${child.tail()}`);
}

export interface StopResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
  killed: boolean;
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export async function stop(child: Child, graceMs = 10_000): Promise<StopResult> {
  const started = performance.now();
  if (exited(child)) return { code: child.proc.exitCode, signal: child.proc.signalCode, ms: 0, killed: false };
  const done = new Promise<void>((resolve) => child.proc.once('exit', () => resolve()));
  child.proc.kill('SIGTERM');
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.proc.kill('SIGKILL');
  }, graceMs);
  await done;
  clearTimeout(timer);
  return { code: child.proc.exitCode, signal: child.proc.signalCode, ms: performance.now() - started, killed };
}

/** VmRSS and VmHWM (peak) in MB from /proc. */
export function memoryMb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!m?.[1]) throw new Error(`${key} not found in /proc/${pid}/status`);
    return Number(m[1]);
  };
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** User+system CPU seconds consumed so far by `pid` (clock ticks assumed 100/s, as on Linux x86/arm). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Binds every thread of `pid` (the main thread, libuv's pool, V8's compiler and GC helpers) to
 * `cpus` (a taskset list: "1", "0-1"), through util-linux's taskset. Threads started later
 * inherit it. Linux only; throws when taskset is missing or refuses.
 */
export function pinTo(pid: number, cpus: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { stdio: 'ignore' });
}

/**
 * For services compared side by side: on a machine of two cores or more, this process (the load
 * generator) is bound to all cores but the last during `run`, which pins each service it starts to
 * `core`, the last: the service under load then has a core of its own in every round, instead of
 * the scheduler moving it and the generator about between them. `core` is undefined on one core.
 */
export async function withServiceCore<T>(log: (line: string) => void, run: (core: string | undefined) => Promise<T>): Promise<T> {
  const cores = availableParallelism();
  const core = cores >= 2 ? String(cores - 1) : undefined;
  if (core) {
    pinTo(process.pid, cores === 2 ? '0' : `0-${cores - 2}`);
    log(`    services bound to CPU ${core}, the load generator to the others`);
  }
  try {
    return await run(core);
  } finally {
    if (core) pinTo(process.pid, `0-${cores - 1}`);
  }
}

/**
 * Two services compared side by side: started one after the other in `order` (alternate it from
 * pair to pair: the start order is not to tell them apart), each bound to `core` when given
 * (withServiceCore), idle before `run`, stopped after it.
 */
export async function withPair<S extends string, T>(order: readonly S[], core: string | undefined, start: (side: S) => Promise<Child>, run: (children: Record<S, Child>) => Promise<T>): Promise<T> {
  const children = {} as Record<S, Child>;
  try {
    for (const side of order) {
      children[side] = await start(side);
      if (core) pinTo(children[side].pid, core);
    }
    for (const side of order) await settle(children[side]);
    return await run(children);
  } finally {
    for (const side of order) if (children[side]) await stop(children[side]);
  }
}

/**
 * Waits until the child uses under `threshold` of a core for two windows in a row, at most `maxMs`.
 * Right after start V8 is still tiering up hot code (PGlite's WebAssembly in particular) on background
 * threads; on 2 cores that competes with the load generator and skews the first measurement.
 */
export async function settle(child: Child, threshold = 0.05, windowMs = 1000, maxMs = 30_000): Promise<number> {
  const started = performance.now();
  let quiet = 0;
  let last = cpuSeconds(child.pid);
  while (quiet < 2 && performance.now() - started < maxMs) {
    await sleep(windowMs);
    const now = cpuSeconds(child.pid);
    quiet = (now - last) / (windowMs / 1000) < threshold ? quiet + 1 : 0;
    last = now;
  }
  return performance.now() - started;
}
