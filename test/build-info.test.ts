// The build an instance runs (issue 30): `npm run build` records the git commit in
// dist/build-info.json (scripts/build-info.js); GET /ready (test/readiness.test.ts, and the real
// process in test/platform/readiness-shutdown.test.ts) and the metric cms_build_info{version,commit}
// carry it with package.json's version.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBuildInfo } from '../src/platform/build-info.js';
import { createMetricsTestApp, scrape, type MetricsTestApp } from './helpers/metrics.js';

const ROOT = join(import.meta.dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'build-info.js');

/** A package folder holding only the build script and a package.json, outside any git checkout. */
function packageFolder(version: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cms-build-info-'));
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(SCRIPT, join(dir, 'scripts', 'build-info.js'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'x', version, type: 'module' }));
  return dir;
}

// The temporary folders must not be found inside an enclosing checkout.
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CEILING_DIRECTORIES: dirname(cwd), GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } }).trim();
const runBuildScript = (dir: string) => execFileSync(process.execPath, [join(dir, 'scripts', 'build-info.js')], { cwd: dir, env: { ...process.env, GIT_CEILING_DIRECTORIES: dirname(dir) } });

describe('the build script and its reader', () => {
  const folders: string[] = [];
  afterAll(() => folders.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('records the commit of the checkout it builds, which the service then reads with the version', () => {
    const dir = packageFolder('3.1.4');
    folders.push(dir);
    git(dir, 'init', '-q');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'one');
    const commit = git(dir, 'rev-parse', 'HEAD');
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    runBuildScript(dir);
    expect(JSON.parse(readFileSync(join(dir, 'dist', 'build-info.json'), 'utf8'))).toEqual({ commit });
    expect(readBuildInfo(dir)).toEqual({ version: '3.1.4', commit });
  });

  it('outside a git checkout the commit is "unknown", and the build does not fail', () => {
    const dir = packageFolder('2.0.0');
    folders.push(dir);
    runBuildScript(dir);
    expect(JSON.parse(readFileSync(join(dir, 'dist', 'build-info.json'), 'utf8'))).toEqual({ commit: 'unknown' });
    expect(readBuildInfo(dir)).toEqual({ version: '2.0.0', commit: 'unknown' });
  });

  it('a build not made by `npm run build` (no dist/build-info.json) reads as "unknown"', () => {
    const dir = packageFolder('2.0.1');
    folders.push(dir);
    expect(readBuildInfo(dir)).toEqual({ version: '2.0.1', commit: 'unknown' });
  });

  it("this checkout's build: package.json's version and the commit `npm run build` recorded", () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(readBuildInfo()).toEqual({ version, commit: git(ROOT, 'rev-parse', 'HEAD') });
  });
});

describe('cms_build_info', () => {
  let t: MetricsTestApp;
  beforeAll(async () => {
    t = await createMetricsTestApp();
  });
  afterAll(() => t.close());

  it('is one gauge sample, value 1, labelled with the version and the commit', async () => {
    const families = await scrape(t.metricsUrl);
    const family = families.get('cms_build_info');
    expect(family?.type).toBe('gauge');
    const { version, commit } = readBuildInfo();
    expect(family!.samples).toEqual([{ name: 'cms_build_info', labels: { version, commit }, value: 1 }]);
  });
});
