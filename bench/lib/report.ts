import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Comparison, Measurement, ResultLine, RunOptions } from '../types.js';

/** dist/bench/lib/report.js -> <repo>/bench/results */
const RESULTS_DIR = fileURLToPath(new URL('../../../bench/results/', import.meta.url));

export function fmt(value: number, unit: string): string {
  if (!Number.isFinite(value)) return String(value);
  const digits = unit === 'ratio' || unit === 's' || unit === 'cores' ? 2 : unit === 'ms' ? 1 : 0;
  const n = value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return unit === 'ratio' ? n : `${n} ${unit}`;
}

export function formatLine(l: ResultLine): string {
  const goal = l.goal ? `goal ${l.goal}` : '';
  return `  ${l.status.padEnd(4)}  ${l.metric.padEnd(34)} ${fmt(l.value, l.unit).padStart(14)}   ${goal}`;
}

export function formatMeasurement(m: Measurement): string {
  const l = m.latencyMs;
  const bad = m.errors + m.non2xx > 0 ? `  errors=${m.errors} non2xx=${m.non2xx}` : '';
  const busy = m.otherCores >= 0.1 ? `  [other processes used ${m.otherCores.toFixed(2)} cores meanwhile]` : '';
  const waited = m.quietWaitMs > 5000 ? `  [waited ${(m.quietWaitMs / 1000).toFixed(0)} s for quiet]` : '';
  return (
    `    ${m.label}: ${fmt(m.reqPerSec, 'req/s')} (${m.total} req, c=${m.connections}, ${m.duration}s)` +
    ` p50=${fmt(l.p50, 'ms')} p95=${fmt(l.p95, 'ms')} p99=${fmt(l.p99, 'ms')}${bad}${busy}${waited}`
  );
}

export function formatComparison(c: Comparison): string {
  const rounds = c.roundRatios.map((r) => r.toFixed(2)).join(', ');
  const redone = c.discardedRounds ? `; ${c.discardedRounds} round(s) redone, machine busy` : '';
  return `${formatMeasurement(c.a)}\n${formatMeasurement(c.b)}\n    ratio ${c.ratio.toFixed(2)} (by round: ${rounds}${redone})`;
}

export function summaryTable(lines: ResultLine[]): string {
  const rows = lines.map((l) => [l.scenario, l.metric, fmt(l.value, l.unit), l.goal ?? '-', l.status]);
  const head = ['scenario', 'metric', 'value', 'goal', 'status'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const row = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [row(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(row)].join('\n');
}

export interface Report {
  options: RunOptions;
  store: string;
  lines: ResultLine[];
  measurements: Array<Measurement & { scenario: string }>;
  failures: string[];
  warnings: string[];
  startedAt: Date;
}

export function writeJson(report: Report): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}latest.json`;
  const cpus = os.cpus();
  const body = {
    startedAt: report.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: { cpus: cpus.length, model: cpus[0]?.model ?? 'unknown', memGb: Math.round(os.totalmem() / 2 ** 30), node: process.version },
    options: report.options,
    store: report.store,
    results: report.lines,
    measurements: report.measurements,
    failures: report.failures,
    warnings: report.warnings,
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  return file;
}
