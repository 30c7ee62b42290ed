// The upgrade check refuses a pair where the release before cannot serve (issue 40, point 6). This
// release is given a migration that breaks the upgrade rule (a column the release before writes,
// renamed), in a worktree of this commit built as `npm run build` builds it; its check, run as
// `npm run upgrade-check` runs it, builds the release before from CHANGELOG.md (0.3.0) and must
// exit 1 naming the release before's failing steps. PostgreSQL only (the check's databases are
// on TEST_DATABASE_URL's server).
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { onPostgres } from '../helpers/stores.js';

const run = promisify(execFile);

describe.runIf(onPostgres)('the upgrade check', () => {
  it('refuses a release whose migration the release before cannot serve on', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'cms-upgrade-refuses-')), 'checkout');
    await run('git', ['worktree', 'add', '--detach', dir, 'HEAD'], { cwd: PROJECT_ROOT });
    try {
      symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(dir, 'node_modules'));
      const next = readdirSync(join(dir, 'migrations')).filter((f) => f.endsWith('.sql')).length + 1;
      // Breaks the upgrade rule: the release before inserts `reason`.
      writeFileSync(join(dir, 'migrations', `${String(next).padStart(4, '0')}_breaks_the_release_before.sql`), 'alter table reports rename column reason to reason_text;\n');
      await run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
      await run(process.execPath, ['scripts/build-info.js'], { cwd: dir });
      const adminUrl = new URL(process.env.TEST_DATABASE_URL!);
      adminUrl.pathname = '/postgres';
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
        execFile(
          process.execPath,
          [join(dir, 'dist/scripts/upgrade-check.js')],
          { cwd: dir, env: { ...process.env, UPGRADE_CHECK_DATABASE_URL: adminUrl.toString() }, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 },
          (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
        );
      });
      expect(code, output.slice(-3000)).toBe(1);
      expect(output).toMatch(/the release before the unreleased changes is \d+\.\d+\.\d+ \(CHANGELOG\.md\)/);
      expect(output).toMatch(/upgrade check: FAILED: \d+ step\(s\) failed for release before/);
      expect(output).toMatch(/FAIL\s+release before\s+report creation/);
    } finally {
      await run('git', ['worktree', 'remove', '--force', dir], { cwd: PROJECT_ROOT }).catch(() => undefined);
    }
  }, 600_000);
});
