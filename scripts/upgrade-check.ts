// Upgrades without downtime (issue 30), checked against the real thing: the release before this
// one keeps serving on the schema this release migrates to, beside this release, as it does while
// a rolling upgrade replaces instances one by one (docs/postgresql.md, "Rolling upgrades").
//
// The release before is the previous release CHANGELOG.md names, built from the commit recorded
// for it there (scripts/release-before.ts; UPGRADE_CHECK_RELEASE_BEFORE=<ref> overrides it), in a
// temporary worktree (bench/lib/builds.ts), and then, on two fresh PostgreSQL databases:
//   1. the release before bootstraps a Director (its CLI migrates to its own schema) and starts;
//      its smoke traffic must pass there, or the check itself is broken;
//   2. this release's CLI migrates the databases while it keeps serving (no restart);
//   3. this release starts beside it; both answer GET /ready, and the smoke traffic
//      (scripts/upgrade-smoke.ts) runs against the release before, then against this release,
//      each reading the other's report.
// Exit 0 when every step passed, 1 otherwise (each step printed with what it got).
// Run: npm run upgrade-check (UPGRADE_CHECK_DATABASE_URL, default postgres://root@127.0.0.1:5432/postgres).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { buildRef } from '../bench/lib/builds.js';
import { installSignalHandlers, runCleanup } from '../bench/lib/cleanup.js';
import { startFakeChat } from '../bench/lib/fake-chat.js';
import { createBenchDatabases } from '../bench/lib/pg.js';
import { API_KEY, freshDataDir, SERVICE_SCRIPT, startService } from '../bench/lib/service.js';
import type { Child } from '../bench/lib/proc.js';
import { readBuildInfo } from '../src/platform/build-info.js';
import { loadMigrations } from '../src/platform/db/migrate.js';
import { PROJECT_ROOT } from '../src/platform/paths.js';
import { releaseBeforeIn } from './release-before.js';
import { readyStep, smoke, type StepResult } from './upgrade-smoke.js';

const run = promisify(execFile);
const ADMIN_URL = process.env.UPGRADE_CHECK_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
const DIRECTOR = '400000000000000009';
const BEFORE = 'release before';
const THIS = 'this release';

const log = (line: string) => console.log(line);
const git = async (...args: string[]) => (await run('git', args, { cwd: PROJECT_ROOT })).stdout.trim();

/** The newest migration's file, and the release before this one (CHANGELOG.md, release-before.ts). */
async function releaseBefore(): Promise<{ file: string; ref: string; why: string }> {
  const newest = loadMigrations().at(-1)!;
  const file = `migrations/${String(newest.version).padStart(4, '0')}_${newest.name}.sql`;
  const given = process.env.UPGRADE_CHECK_RELEASE_BEFORE;
  if (given) return { file, ref: given, why: `UPGRADE_CHECK_RELEASE_BEFORE=${given}` };
  const { commit, why } = releaseBeforeIn(readFileSync(join(PROJECT_ROOT, 'CHANGELOG.md'), 'utf8'));
  try {
    await git('rev-parse', '--verify', `${commit}^{commit}`);
  } catch {
    const shallow = (await git('rev-parse', '--is-shallow-repository')) === 'true';
    throw new Error(`${why}, which is not in this clone${shallow ? ': it is shallow; git fetch --unshallow' : ''}`);
  }
  return { file, ref: commit, why };
}

/** A build's CLI (dist/src/cli.js beside its server.js) on the two databases. */
async function cli(script: string, env: Record<string, string>, ...args: string[]): Promise<StepResult & { output: string }> {
  const label = script === SERVICE_SCRIPT ? THIS : BEFORE;
  const step = `CLI ${args.join(' ')}`;
  try {
    const { stdout, stderr } = await run(process.execPath, [join(dirname(script), 'cli.js'), ...args], { env: { ...process.env, ...env }, timeout: 120_000 });
    return { build: label, step, ok: true, detail: 'exit 0', output: (stdout + stderr).trim() };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { build: label, step, ok: false, detail: `exit ${e.code}: ${(e.stderr || e.stdout || String(err)).trim().slice(0, 500)}`, output: '' };
  }
}

function print(results: StepResult[]): void {
  for (const r of results) log(`  ${r.ok ? 'ok  ' : 'FAIL'}  ${r.build.padEnd(14)} ${r.step}: ${r.detail}`);
}

async function main(): Promise<number> {
  installSignalHandlers();
  const started = Date.now();
  const { file, ref, why } = await releaseBefore();
  log(`upgrade check: ${why}`);
  const before = await buildRef(BEFORE, ref, log);
  const { productionUrl, demoUrl } = await createBenchDatabases(ADMIN_URL);
  const chat = await startFakeChat();
  const env = { PRODUCTION_DATABASE_URL: productionUrl, DEMO_DATABASE_URL: demoUrl };
  const start = (script: string, label: string) => startService({ dataDir: freshDataDir(), productionUrl, demoUrl, script, label, extraEnv: chat.env });
  const children: Child[] = [];

  // 1. The release before, on its own schema.
  const own: StepResult[] = [];
  const bootstrap = await cli(before.script, env, 'bootstrap', '--env', 'production', '--chat-id', DIRECTOR, '--name', 'Upgrade Director');
  own.push(bootstrap);
  const old = await start(before.script, BEFORE);
  children.push(old.child);
  own.push(await readyStep(BEFORE, old.child.url), ...(await smoke({ build: BEFORE, url: old.child.url, apiKey: API_KEY, directorChatId: DIRECTOR })));
  log(`\n${BEFORE} (${before.commit.slice(0, 10)}) on its own schema:`);
  print(own);
  if (own.some((r) => !r.ok)) {
    log(`\nupgrade check: BROKEN: the smoke traffic fails on the release before's own schema; fix the check\n${old.child.tail()}`);
    return 1;
  }

  // 2. This release migrates the databases while the release before serves; 3. both serve.
  const upgraded: StepResult[] = [];
  const migrated = await cli(SERVICE_SCRIPT, env, 'migrate');
  upgraded.push(migrated);
  if (migrated.ok) {
    const current = await start(SERVICE_SCRIPT, THIS);
    children.push(current.child);
    const oldUrl = old.child.url;
    const newUrl = current.child.url;
    upgraded.push(await readyStep(THIS, newUrl, readBuildInfo().commit), await readyStep(BEFORE, oldUrl));
    upgraded.push(...(await smoke({ build: BEFORE, url: oldUrl, apiKey: API_KEY, directorChatId: DIRECTOR, other: { build: THIS, url: newUrl } })));
    upgraded.push(...(await smoke({ build: THIS, url: newUrl, apiKey: API_KEY, directorChatId: DIRECTOR, other: { build: BEFORE, url: oldUrl } })));
  }
  log(`\nafter this release's migrate (${migrated.output.split('\n').join('; ') || migrated.detail}), both serving:`);
  print(upgraded);
  const failed = upgraded.filter((r) => !r.ok);
  const seconds = Math.round((Date.now() - started) / 1000);
  if (failed.length === 0) {
    log(`\nupgrade check: passed: ${BEFORE} ${before.commit.slice(0, 10)} serves on the schema of ${file}, beside ${THIS} (${seconds} s)`);
    return 0;
  }
  for (const child of children) if (child.tail() !== '') log(`\n--- ${child.label}'s log (last lines) ---\n${child.tail()}`);
  log(`\nupgrade check: FAILED: ${failed.length} step(s) failed for ${[...new Set(failed.map((r) => r.build))].join(' and ')} on the schema of ${file} (${seconds} s)`);
  return 1;
}

main()
  .catch((err: Error) => {
    console.error(`upgrade check: FAILED: ${err.stack ?? err.message}`);
    return 1;
  })
  .then(async (code) => {
    await runCleanup();
    process.exit(code);
  });
