// Metrics tests: the app with METRICS_PORT set and its metrics listener on an ephemeral port, and
// the exposition read back through a strict parser of the Prometheus text format.
import { listenMetrics, type MetricsServer } from '../../src/platform/http/metrics-server.js';
import { createTestApp, type TestApp, type TestAppOptions } from './app.js';
import { parsePrometheusText, type Family } from './prometheus-text.js';

export interface MetricsTestApp extends TestApp {
  metricsServer: MetricsServer;
  metricsUrl: string;
}

export async function createMetricsTestApp(options: TestAppOptions = {}): Promise<MetricsTestApp> {
  const t = await createTestApp({ ...options, env: { METRICS_PORT: '0', ...options.env } });
  const metricsServer = await listenMetrics(t.metrics, { host: '127.0.0.1', port: 0 });
  const address = metricsServer.address();
  return {
    ...t,
    metricsServer,
    metricsUrl: `http://127.0.0.1:${address.port}`,
    async close() {
      await metricsServer.close();
      await t.close();
    },
  };
}

export type Families = Map<string, Family>;

/** GET /metrics over HTTP, checked as Prometheus text and parsed into families by name. */
export async function scrape(baseUrl: string): Promise<Families> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status} ${await res.text()}`);
  const type = res.headers.get('content-type');
  if (type !== 'text/plain; version=0.0.4; charset=utf-8') throw new Error(`content-type ${type}`);
  return parse(await res.text());
}

/** The strict parse, and every family typed and documented, as a scraper expects of this service. */
export function parse(text: string): Families {
  const families = parsePrometheusText(text);
  for (const family of families.values()) {
    if (family.type === 'untyped' || family.help === '') throw new Error(`family ${family.name} has no TYPE or HELP`);
  }
  return families;
}

const exactly = (labels: Record<string, string>, wanted: Record<string, string>) =>
  Object.keys(labels).length === Object.keys(wanted).length && Object.entries(wanted).every(([k, v]) => labels[k] === v);

/** The value of the one sample named `name` with exactly these labels (undefined when there is none). */
export function value(families: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  if (!families.has(name)) throw new Error(`no family ${name}`);
  const found = families.get(name)!.samples.filter((s) => s.name === name && exactly(s.labels, labels));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0]?.value;
}

/** A histogram's count, sum and +Inf bucket for exactly these labels. */
export function histogram(families: Families, name: string, labels: Record<string, string>): { count: number; sum: number; inf: number } | undefined {
  const samples = families.get(name)?.samples ?? [];
  const of = (suffix: string, extra: Record<string, string> = {}) => samples.find((s) => s.name === name + suffix && exactly(s.labels, { ...labels, ...extra }))?.value;
  const count = of('_count');
  return count === undefined ? undefined : { count, sum: of('_sum')!, inf: of('_bucket', { le: '+Inf' })! };
}

/** Every value a label takes in a family, to check a raw URL never became one. */
export function labelValues(families: Families, name: string, label: string): string[] {
  return [...new Set((families.get(name)?.samples ?? []).map((s) => s.labels[label]).filter((v): v is string => v !== undefined))];
}
