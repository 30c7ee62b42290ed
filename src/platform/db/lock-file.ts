// PGlite lets a second process open the same data folder and silently lose writes. The holder
// writes its pid to `<folder>.lock`; another process refuses while that pid is alive, and takes
// the lock over when the file was left behind by a process that died.
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export class DataFolderLockedError extends Error {
  constructor(folder: string, pid: number) {
    super(
      `The embedded data folder ${folder} is in use by process ${pid} (is the service running?). ` +
        'Only one process may open it: stop that process first, or point <ENV>_DATABASE_URL at PostgreSQL.',
    );
    this.name = 'DataFolderLockedError';
  }
}

export interface FolderLock {
  release(): void;
}

const held = new Set<string>();
process.on('exit', () => held.forEach(removeQuietly));

export function lockDataFolder(folder: string): FolderLock {
  const path = `${folder}.lock`;
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(path);
      return {
        release() {
          if (held.delete(path)) removeQuietly(path);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileQuietly(path));
      if (pid > 0 && isAlive(pid)) throw new DataFolderLockedError(folder, pid);
      removeQuietly(path); // stale: its holder is gone
    }
  }
  throw new Error(`Could not take the lock ${path}: another process keeps recreating it`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readFileQuietly(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
