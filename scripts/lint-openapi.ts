// `npm run lint:openapi`: the document the service serves (scripts/openapi-document.ts), written to
// dist/openapi.json and linted by Redocly CLI under redocly.yaml (the recommended rules; each one
// changed there says why). Redocly itself fails only on errors; here a warning fails too.
// Exit 0 when the document has no problem at all, 1 otherwise (each problem listed by its place).
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../src/platform/paths.js';
import { servedOpenApiDocument } from './openapi-document.js';

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>;
}

const run = promisify(execFile);
const document = join(PROJECT_ROOT, 'dist', 'openapi.json');
const redocly = join(PROJECT_ROOT, 'node_modules', '.bin', 'redocly');

await writeFile(document, await servedOpenApiDocument());
const args = ['lint', relative(PROJECT_ROOT, document), '--config', 'redocly.yaml', '--lint-config', 'error', '--format', 'json', '--max-problems', '10000'];
// Redocly exits 1 when it finds an error; its JSON report is on stdout either way.
const { stdout, stderr } = await run(redocly, args, { cwd: PROJECT_ROOT, maxBuffer: 64 * 1024 * 1024 }).catch((err: { stdout?: string; stderr?: string }) => ({
  stdout: err.stdout ?? '',
  stderr: err.stderr ?? String(err),
}));
let report: LintReport;
try {
  report = JSON.parse(stdout) as LintReport;
} catch {
  console.error(stderr.trim() || 'redocly lint answered no report');
  process.exit(1);
}
for (const problem of report.problems) {
  const where = problem.location.map((l) => decodeURIComponent(l.pointer).replaceAll('~1', '/').replaceAll('~0', '~')).join(', ');
  console.log(`${problem.severity} ${problem.ruleId}: ${problem.message} (${where})`);
}
const { errors, warnings } = report.totals;
console.log(`${relative(PROJECT_ROOT, document)}: ${errors} error(s), ${warnings} warning(s) under redocly.yaml`);
process.exit(errors + warnings === 0 ? 0 : 1);
