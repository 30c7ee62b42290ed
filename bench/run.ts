import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { installSignalHandlers, runCleanup } from './lib/cleanup.js';
import { makeContext } from './lib/context.js';
import { freshStore } from './lib/own-service.js';
import { settle, spawnNode, stop, waitReady, type Child } from './lib/proc.js';
import { formatLine, summaryTable, writeJson, type Report } from './lib/report.js';
import { SERVICE_SCRIPT, startService } from './lib/service.js';
import { scenarios } from './scenarios/index.js';
import type { RunOptions, Scenario } from './types.js';

const HELP = `usage: node dist/bench/run.js [options]   (or: npm run bench -- [options])
  --only <a,b>         run only these scenarios (${scenarios.map((s) => s.name).join(', ')}; audit-sealing, visibility-cost, pooler-cost, subject-privacy and soak run only when named)
  --duration <s>       measured seconds per side of a comparison (default 10)
  --connections <n>    concurrent connections (default 50)
  --warmup <s>         discarded warm-up seconds before each load run (default 2)
  --rounds <n>         alternating rounds a service/baseline comparison is split into (default 5)
  --quiet-wait <s>     before each load run, wait at most this long for other processes to go quiet (default 30; 0 = don't)
  --pg <url>           run the shared service on PostgreSQL: two fresh databases are created next to <url> and dropped at the end
  --list               list scenarios and exit`;

class UsageError extends Error {}

function positive(name: string, raw: string | undefined, fallback: number, allowZero = false): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) throw new UsageError(`--${name} must be a positive number, got "${raw}"`);
  return n;
}

function parseOptions(): RunOptions & { list: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        only: { type: 'string' },
        duration: { type: 'string' },
        connections: { type: 'string' },
        warmup: { type: 'string' },
        rounds: { type: 'string' },
        'quiet-wait': { type: 'string' },
        pg: { type: 'string' },
        list: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${HELP}`);
  }
  const { values } = parsed;
  if (values.help) {
    console.log(HELP);
    process.exit(0);
  }
  const only = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : null;
  const unknown = (only ?? []).filter((n) => !scenarios.some((s) => s.name === n));
  if (unknown.length) throw new UsageError(`unknown scenario(s): ${unknown.join(', ')}\n${HELP}`);
  return {
    only,
    duration: positive('duration', values.duration, 10),
    connections: Math.round(positive('connections', values.connections, 50)),
    warmup: positive('warmup', values.warmup, 2, true),
    rounds: Math.round(positive('rounds', values.rounds, 5)),
    quietWait: positive('quiet-wait', values['quiet-wait'], 30, true),
    pg: values.pg ?? null,
    list: values.list ?? false,
  };
}

async function main(): Promise<number> {
  installSignalHandlers();
  const { list, ...options } = parseOptions();
  if (list) {
    for (const s of scenarios) console.log(`${s.name.padEnd(18)} ${s.description}`);
    return 0;
  }
  const selected: Scenario[] = scenarios.filter((s) => (options.only ? options.only.includes(s.name) : !s.onlyWhenNamed));
  const needs = new Set(selected.flatMap((s) => s.needs));
  const report: Report = { options, store: options.pg ? 'postgres' : 'pglite', lines: [], measurements: [], failures: [], warnings: [], startedAt: new Date() };
  console.log(
    `bench: ${selected.map((s) => s.name).join(', ')} | duration ${options.duration}s in ${options.rounds} rounds, ` +
      `warm-up ${options.warmup}s, ${options.connections} connections, store ${report.store}`,
  );

  let baseline: Child | null = null;
  let service: Child | null = null;
  if (needs.has('baseline')) {
    baseline = await spawnNode('hello-world', fileURLToPath(new URL('./hello-world.js', import.meta.url)), {});
    console.log(`bare hello-world ready in ${(await waitReady(baseline, 'hello world')).toFixed(0)} ms at ${baseline.url}`);
    await settle(baseline);
  }
  if (needs.has('service')) {
    const started = await startService({ ...(await freshStore(options.pg)), chat: true });
    service = started.child;
    console.log(`service (${SERVICE_SCRIPT}) ready in ${started.readyMs.toFixed(0)} ms at ${service.url}, store ${report.store}`);
    console.log(`service idle (under 5% CPU) after ${((await settle(service)) / 1000).toFixed(1)} s more`);
  }

  for (const scenario of selected) {
    console.log(`\n== ${scenario.name}: ${scenario.description}`);
    const ctx = makeContext(scenario, options, service, baseline, report);
    try {
      const lines = await scenario.run(ctx);
      for (const l of lines) console.log(formatLine(l));
      report.lines.push(...lines);
    } catch (err) {
      report.failures.push(`${scenario.name} failed: ${(err as Error).message}`);
      console.log(`  ERROR ${scenario.name} failed: ${(err as Error).stack ?? String(err)}`);
    }
  }

  for (const child of [service, baseline]) {
    if (!child) continue;
    const s = await stop(child);
    if (s.killed || s.code !== 0) report.failures.push(`${child.label} did not exit cleanly on SIGTERM (code ${s.code}, signal ${s.signal}, killed ${s.killed})`);
  }

  console.log(`\n${summaryTable(report.lines)}`);
  const misses = report.lines.filter((l) => l.status === 'MISS').length;
  console.log(`\n${misses} goal(s) missed (a MISS does not fail the run). Results: ${writeJson(report)}`);
  if (report.warnings.length) {
    console.log(`\nWARNING: the machine was busy with other work; these throughput figures are unreliable:`);
    console.log(report.warnings.map((w) => `  - ${w}`).join('\n'));
  }
  if (report.failures.length) {
    console.log(`\nFAILED: ${report.failures.length} error(s):\n${report.failures.map((f) => `  - ${f}`).join('\n')}`);
    return 1;
  }
  return 0;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(err instanceof UsageError ? err.message : `bench failed: ${(err as Error).stack ?? String(err)}`);
} finally {
  await runCleanup();
}
process.exit(code);
