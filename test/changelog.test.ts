// Releases (issue 31): CHANGELOG.md in Keep a Changelog 1.1.0's shape, with a section for the
// version package.json names (and package-lock.json repeats), which is the version GET /ready
// reports (src/platform/build-info.ts reads it from package.json).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';

const ROOT = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; engines: { node: string } };
const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string; engines?: { node: string } }> };
const changelog = read('CHANGELOG.md');

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;
const CHANGE_TYPES = ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'];

/** The `## ` sections in order: their heading and the `### ` headings under each. */
function sections(text: string): { heading: string; types: string[] }[] {
  const out: { heading: string; types: string[] }[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('## ')) out.push({ heading: line.slice(3), types: [] });
    else if (line.startsWith('### ')) out.at(-1)?.types.push(line.slice(4));
  }
  return out;
}

const compare = (a: string, b: string) => {
  const [x, y] = [SEMVER.exec(a)!.slice(1).map(Number), SEMVER.exec(b)!.slice(1).map(Number)];
  return x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]!;
};

describe('CHANGELOG.md', () => {
  it('is a Keep a Changelog 1.1.0 file: Unreleased on top, then each version newest first, dated, with the standard change types', () => {
    expect(changelog.startsWith('# Changelog\n')).toBe(true);
    expect(changelog).toContain('[Keep a Changelog](https://keepachangelog.com/en/1.1.0/)');
    const [unreleased, ...releases] = sections(changelog);
    expect(unreleased?.heading).toBe('[Unreleased]');
    expect(releases.length).toBeGreaterThanOrEqual(2);
    const parsed = releases.map(({ heading, types }) => {
      const m = /^\[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$/.exec(heading);
      expect(m, heading).not.toBeNull();
      expect(new Date(`${m![2]}T00:00:00Z`).toISOString().slice(0, 10), heading).toBe(m![2]);
      expect(types.length, heading).toBeGreaterThan(0);
      for (const type of types) expect(CHANGE_TYPES, `${heading}: ${type}`).toContain(type);
      expect(new Set(types).size, heading).toBe(types.length);
      return { version: m![1]!, date: m![2]! };
    });
    for (let i = 1; i < parsed.length; i++) {
      expect(compare(parsed[i - 1]!.version, parsed[i]!.version), `${parsed[i - 1]!.version} above ${parsed[i]!.version}`).toBeGreaterThan(0);
      expect(parsed[i - 1]!.date >= parsed[i]!.date).toBe(true);
    }
  });

  it("has package.json's version as its newest release, and package-lock.json says the same", () => {
    expect(pkg.version).toMatch(SEMVER);
    const newest = sections(changelog)[1]?.heading;
    expect(newest).toMatch(new RegExp(`^\\[${pkg.version.replaceAll('.', '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`));
    expect(lock.version).toBe(pkg.version);
    expect(lock.packages['']?.version).toBe(pkg.version);
    expect(lock.packages['']?.engines).toEqual(pkg.engines);
  });
});

describe('GET /ready', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it("reports package.json's version, the one CHANGELOG.md releases", async () => {
    const res = await t.app.inject({ url: '/ready', headers: { host: 'localhost' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: true, version: pkg.version, environments: { production: 'ok', demo: 'ok' } });
    expect(changelog).toContain(`\n## [${res.json<{ version: string }>().version}] - `);
  });
});
