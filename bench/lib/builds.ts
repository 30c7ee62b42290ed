// The builds of the service a scenario runs: this checkout's (dist/), and another one made from a
// git ref in the same run, for scenarios that set a change against the code before it
// (visibility-cost). The other build is checked out into a temporary worktree, given its
// dependencies (a link to these when the lockfile is the same, else `npm ci`), compiled with its
// own tsc, and removed at the end of the run. Each build migrates and seals its own databases, so
// a database holds the schema its service expects.
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { sealAvailable } from '../../src/platform/audit-chain/seal.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import type { Db } from '../../src/platform/db/types.js';
import { onCleanup } from './cleanup.js';
import { SERVICE_SCRIPT } from './service.js';

const run = promisify(execFile);

/** What a scenario needs of one build: its server, and its own migrations and sealer. */
export interface Build {
  label: string;
  /** Its dist/src/server.js. */
  script: string;
  migrate(db: Db): Promise<unknown>;
  sealAvailable(db: Db, limit?: number): Promise<{ sealed: number }>;
  openPostgres(options: { connectionString: string; max?: number }): Db;
}

/** This checkout's build (the one the harness itself is part of). */
export const thisBuild = (label = 'current'): Build => ({ label, script: SERVICE_SCRIPT, migrate, sealAvailable, openPostgres });

/** dist/bench/lib/builds.js -> the checkout's root. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The build whose dist/src/server.js is `script`, its modules loaded from beside it. */
export async function loadBuild(label: string, script: string): Promise<Build> {
  const src = dirname(script);
  const from = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(src, path)).href)) as T;
  const [m, s, p] = await Promise.all([
    from<{ migrate: Build['migrate'] }>('platform/db/migrate.js'),
    from<{ sealAvailable: Build['sealAvailable'] }>('platform/audit-chain/seal.js'),
    from<{ openPostgres: Build['openPostgres'] }>('platform/db/postgres.js'),
  ]);
  return { label, script, migrate: m.migrate, sealAvailable: s.sealAvailable, openPostgres: p.openPostgres };
}

/**
 * Builds `ref` of this repository in a temporary worktree (removed at the end of the run) and
 * returns it with the commit it resolved to.
 */
export async function buildRef(label: string, ref: string, log: (line: string) => void): Promise<Build & { commit: string }> {
  const started = Date.now();
  const git = (...args: string[]) => run('git', args, { cwd: ROOT });
  const commit = (await git('rev-parse', '--verify', `${ref}^{commit}`)).stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), `cms-build-${commit.slice(0, 7)}-`));
  rmSync(dir, { recursive: true });
  await git('worktree', 'add', '--detach', dir, commit);
  onCleanup(async () => {
    // The link first: the worktree's removal must not reach into this checkout's dependencies
    // (a folder that `npm ci` made goes with the worktree).
    const modules = join(dir, 'node_modules');
    if (lstatSync(modules, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(modules);
    await git('worktree', 'remove', '--force', dir);
  });
  const sameLock = readFileSync(join(ROOT, 'package-lock.json'), 'utf8') === readFileSync(join(dir, 'package-lock.json'), 'utf8');
  if (sameLock) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
  // Its own build script: tsc, and (from issue 30 on) the commit it was built from in dist/build-info.json.
  await run('npm', ['run', '--silent', 'build'], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
  const script = join(dir, 'dist', 'src', 'server.js');
  if (!existsSync(script)) throw new Error(`${ref} (${commit}) built no dist/src/server.js in ${dir}`);
  log(`    ${label}: ${ref} (${commit.slice(0, 10)}) built in ${dir} in ${((Date.now() - started) / 1000).toFixed(0)} s (dependencies ${sameLock ? 'linked: same lockfile' : 'installed: npm ci'})`);
  return { ...(await loadBuild(label, script)), commit };
}
