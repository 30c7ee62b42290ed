// Run by `npm run build` after tsc: writes dist/build-info.json with the git commit the build was
// made from, which GET /ready and the cms_build_info metric report (src/platform/build-info.ts).
// Read once here rather than from git at every start: the build is what runs, and a deployment
// need not carry .git or the git binary. Outside a git checkout (a source tarball) it is "unknown".
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let commit = 'unknown';
try {
  commit = execFileSync('git', ['rev-parse', '--verify', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
} catch {
  // not a git checkout, or no git: the build still runs, and says it does not know
}
mkdirSync(join(root, 'dist'), { recursive: true });
writeFileSync(join(root, 'dist', 'build-info.json'), JSON.stringify({ commit }) + '\n');
