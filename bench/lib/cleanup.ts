import type { ChildProcess } from 'node:child_process';

type Task = () => Promise<void> | void;

const tasks: Task[] = [];
const children = new Set<ChildProcess>();
let running: Promise<void> | null = null;

export function onCleanup(task: Task): void {
  tasks.push(task);
}

export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

export function trackedPids(): number[] {
  return [...children].flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
}

/** Runs registered tasks once, newest first; safe to call from several paths. */
export function runCleanup(): Promise<void> {
  running ??= (async () => {
    // Children first: a live service would keep writing into the DATA_DIR or holding the databases we remove.
    const exits = [...children].map(
      (c) =>
        new Promise<void>((resolve) => {
          c.once('exit', () => resolve());
          setTimeout(resolve, 3000).unref();
        }),
    );
    killChildren();
    await Promise.all(exits);
    for (const task of tasks.reverse()) {
      try {
        await task();
      } catch (err) {
        console.error(`cleanup: ${(err as Error).message}`);
      }
    }
  })();
  return running;
}

function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

export function installSignalHandlers(): void {
  // Last resort: the event loop is gone, only synchronous kills work here.
  process.once('exit', killChildren);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      console.error(`\nreceived ${signal}, cleaning up...`);
      const hardStop = setTimeout(() => process.exit(130), 15_000);
      hardStop.unref();
      void runCleanup().finally(() => process.exit(130));
    });
  }
}
