import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { trackedPids } from './cleanup.js';
import { cpuSeconds } from './proc.js';

// The 2 cores are shared with whatever else runs on the machine (a test suite, a build). Load from
// those processes skews a throughput figure far more than anything the harness does, so it is
// measured and, before each load run, waited out for a bounded time.

const sharedCommands = new Set<string>();

/** Counts processes with this command name (e.g. the PostgreSQL server the service uses) as part of the run. */
export function countAsOurs(command: string): void {
  sharedCommands.add(command);
}

function sharedSeconds(): number {
  if (sharedCommands.size === 0) return 0;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (sharedCommands.has(readFileSync(`/proc/${entry}/comm`, 'utf8').trim())) total += cpuSeconds(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

interface Snapshot {
  at: number;
  /** user+nice+system+steal seconds of the whole machine; irq/softirq left out (loopback traffic lands there). */
  busy: number;
  /** CPU seconds of the harness and its children. */
  ours: number;
}

function snapshot(): Snapshot {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  const [user = 0, nice = 0, system = 0, , , , , steal = 0] = cpu;
  const usage = process.cpuUsage();
  let ours = (usage.user + usage.system) / 1e6 + sharedSeconds();
  for (const pid of trackedPids()) {
    try {
      ours += cpuSeconds(pid);
    } catch {
      // exited between listing and reading
    }
  }
  return { at: performance.now(), busy: (user + nice + system + steal) / 100, ours };
}

/** Cores' worth of CPU used by other processes between two snapshots. */
function others(a: Snapshot, b: Snapshot): number {
  const seconds = (b.at - a.at) / 1000;
  return seconds > 0 ? Math.max(0, b.busy - a.busy - (b.ours - a.ours)) / seconds : 0;
}

export class OtherLoad {
  private start = snapshot();
  /** Average cores used by other processes since construction. */
  cores(): number {
    return others(this.start, snapshot());
  }
}

export const QUIET_CORES = 0.15;
/** Above this much foreign CPU during a load run, the run is redone or its figures flagged as unreliable. */
export const BUSY_CORES = 0.25;

/** Waits (0.5 s windows, at most maxMs) until other processes use under QUIET_CORES; returns ms waited. */
export async function waitQuiet(maxMs: number): Promise<{ waitedMs: number; cores: number }> {
  const started = performance.now();
  let cores = Number.POSITIVE_INFINITY;
  while (maxMs > 0) {
    const a = snapshot();
    await sleep(500);
    cores = others(a, snapshot());
    if (cores < QUIET_CORES || performance.now() - started >= maxMs) break;
  }
  return { waitedMs: performance.now() - started, cores };
}
