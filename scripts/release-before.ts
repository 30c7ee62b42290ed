// The release before this one, as CHANGELOG.md names it (issue 40): the upgrade check builds it and
// runs it beside this release on this release's schema. This release is the changes under
// "## [Unreleased]" when there are any (the release before is then the newest version named), else
// the newest version (the release before is the version under it). Each version's commit is a
// link reference at the end of the file, `[0.3.0]: <40 hex digits>`, written when it is released.

export interface ReleaseBefore {
  version: string;
  commit: string;
  /** Why this one, for the check's first line. */
  why: string;
}

const VERSION_HEADING = /^## \[(\d+\.\d+\.\d+)\]/;
const COMMIT_REFERENCE = /^\[(\d+\.\d+\.\d+)\]:\s*([0-9a-f]{40})\s*$/;

export function releaseBeforeIn(changelog: string): ReleaseBefore {
  const lines = changelog.split('\n');
  const versions = lines.map((line) => VERSION_HEADING.exec(line)?.[1]).filter((v): v is string => v !== undefined);
  const unreleasedAt = lines.findIndex((line) => /^## \[Unreleased\]/i.test(line));
  let unreleased = false;
  if (unreleasedAt >= 0) {
    for (let i = unreleasedAt + 1; i < lines.length && !lines[i]!.startsWith('## ['); i++) {
      if (/^\s*- /.test(lines[i]!)) unreleased = true;
    }
  }
  const version = unreleased ? versions[0] : versions[1];
  if (version === undefined) throw new Error(`CHANGELOG.md names no release before ${unreleased ? 'the unreleased changes' : (versions[0] ?? 'this one')}`);
  const commit = lines.map((line) => COMMIT_REFERENCE.exec(line)).find((m) => m?.[1] === version)?.[2];
  if (commit === undefined) throw new Error(`CHANGELOG.md records no commit for ${version}: add the line \`[${version}]: <its commit, 40 hex digits>\` at its end`);
  const what = unreleased ? 'the unreleased changes' : `${versions[0]}`;
  return { version, commit, why: `the release before ${what} is ${version} (CHANGELOG.md), commit ${commit.slice(0, 10)}` };
}
