import type { Context, MeasureOptions, Measurement, ResultLine, RunOptions, Scenario } from '../types.js';
import { BUSY_CORES } from './machine.js';
import { compare, measure, ratio, sampleResponse } from './measure.js';
import type { Child } from './proc.js';
import type { Report } from './report.js';
import { API_KEY, DEMO_API_KEY } from './service.js';

/** The scenario's view of the run; every measurement is recorded in `report` and checked for errors. */
export function makeContext(scenario: Scenario, options: RunOptions, service: Child | null, baseline: Child | null, report: Report): Context {
  const record = async (m: Measurement, opts: MeasureOptions): Promise<void> => {
    report.measurements.push({ ...m, scenario: scenario.name });
    if (m.otherCores >= BUSY_CORES) {
      report.warnings.push(`${scenario.name}: ${m.label}: other processes used ${m.otherCores.toFixed(2)} of 2 cores meanwhile`);
    }
    if (m.errors + m.non2xx === 0) return;
    const codes = Object.entries(m.statusCodes).map(([c, n]) => `${c}:${n}`).join(' ');
    const msg =
      `${scenario.name}: ${m.label}: ${m.errors} connection errors/timeouts, ${m.non2xx} non-2xx ` +
      `(status ${codes}); sample: ${await sampleResponse(opts)}`;
    report.failures.push(msg);
    console.log(`  ERROR ${msg}`);
  };
  return {
    options,
    serviceUrl: service?.url ?? '',
    baselineUrl: baseline?.url ?? '',
    apiKey: API_KEY,
    demoApiKey: DEMO_API_KEY,
    store: options.pg ? 'postgres' : 'pglite',
    ratio,
    log: (m) => console.log(m),
    async measure(opts) {
      const m = await measure(opts, options);
      await record(m, opts);
      return m;
    },
    async compare(a, b) {
      const c = await compare(a, b, options);
      await record(c.a, a);
      await record(c.b, b);
      return c;
    },
    line(metric, value, unit, goal): ResultLine {
      const status = goal ? (goal.ok ? 'PASS' : 'MISS') : 'INFO';
      return { scenario: scenario.name, metric, value, unit, status, ...(goal ? { goal: goal.text } : {}) };
    },
  };
}
