// The upgrade check's release before (issue 40, point 6): the previous release CHANGELOG.md names,
// from the commit recorded for it, not the commit before the newest migration (a migration that
// arrived in a merge made that commit this release itself, and the check passed against itself).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/platform/paths.js';
import { releaseBeforeIn } from '../scripts/release-before.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const changelog = (unreleased: string) => `# Changelog

## [Unreleased]
${unreleased}
## [0.3.0] - 2026-11-26

### Added

- Something.

## [0.2.0] - 2026-11-25

- Something else.

[0.3.0]: ${A}
[0.2.0]: ${B}
`;

describe('the release before, from CHANGELOG.md', () => {
  it('is the newest version while changes are unreleased', () => {
    expect(releaseBeforeIn(changelog('\n### Fixed\n\n- A fix.\n'))).toMatchObject({ version: '0.3.0', commit: A });
  });

  it('is the version under the newest once nothing is unreleased', () => {
    expect(releaseBeforeIn(changelog('\n'))).toMatchObject({ version: '0.2.0', commit: B });
  });

  it('is refused, naming the line to add, when its commit is not recorded', () => {
    expect(() => releaseBeforeIn(changelog('\n- A fix.\n').replace(`[0.3.0]: ${A}\n`, ''))).toThrow('CHANGELOG.md records no commit for 0.3.0: add the line `[0.3.0]: <its commit, 40 hex digits>` at its end');
  });

  it('is refused when there is none', () => {
    expect(() => releaseBeforeIn('# Changelog\n\n## [0.1.0] - 2026-11-01\n\n- First.\n')).toThrow('CHANGELOG.md names no release before 0.1.0');
  });

  it("is, for this repository's CHANGELOG.md, a release with its commit recorded", () => {
    const found = releaseBeforeIn(readFileSync(join(PROJECT_ROOT, 'CHANGELOG.md'), 'utf8'));
    expect(found.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(found.commit).toMatch(/^[0-9a-f]{40}$/);
  });
});
