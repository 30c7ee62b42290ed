// Prometheus metrics (issue 20), through prom-client: one registry per app, scraped only on the
// METRICS_PORT listener (metrics-server.ts), never through the public port. Every module adds its
// series here through this narrow interface and knows nothing of prom-client's registry:
//   - counter / gauge: get-or-create by name, then inc / set as prom-client;
//   - countedHistogram: durations on a hot path, as plain counts formatted at scrape time;
//   - counterFrom: a count the module keeps anyway (a number that only grows), read at scrape time;
//   - readDatabases: gauges read from each environment's database at scrape time, bounded.
// From a route or plugin: `app.metrics` (or `request.server.metrics`); elsewhere, the instance
// server.ts creates. Names start with `cms_`; a label `environment` where the figure is per environment:
//   const uses = app.metrics.counter('cms_x_total', 'What it counts', ['environment']);
//   uses.inc({ environment: request.environment.name });
// Off (METRICS_PORT unset), the same calls work on a registry nobody scrapes: the costly parts
// (per-request timing, the Db observer, the process's default metrics) are not installed at all.
import { performance } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { buildInfo } from './build-info.js';
import type { Queryable } from './db/types.js';
import { withinDeadline } from './deadline.js';

/** One value of a gauge read from a database; the environment label is added by the caller. */
export interface Sample {
  gauge: Gauge<string>;
  labels?: Record<string, string>;
  value: number;
}

/** One value of a counter kept elsewhere, by its labels (`counterFrom`). */
export interface LabelledCount<L extends string> {
  labels: Partial<Record<L, string>>;
  value: number;
}

/** What `readDatabases` reads: one environment's database, the values of its gauges. */
export type DatabaseReader = (db: Queryable) => Promise<Sample[]>;

interface EnvironmentDb {
  readonly name: string;
  readonly db: Queryable;
}

/** A database read that takes longer is left out of that scrape: Prometheus' own timeout is 10 s. */
export const DATABASE_READ_DEADLINE_MS = 1_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's metrics: routes and plugins add their series through it (see src/platform/metrics.ts). */
    metrics: Metrics;
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly readers: DatabaseReader[] = [];
  /** Every gauge a reader ever set: reset before each scrape, so a value that was not read again is absent, not stale. */
  private readonly readGauges = new Set<Gauge<string>>();
  private environments: () => Iterable<EnvironmentDb> = () => [];
  private readonly readFailures: Counter<'environment'>;

  constructor(readonly enabled: boolean) {
    // Event-loop lag, GC, heap, RSS, handles: prom-client's own names (process_*, nodejs_*).
    if (enabled) collectDefaultMetrics({ register: this.registry });
    // Prometheus' info-metric idiom: always 1, the build in its labels (which release each instance runs).
    const { version, commit } = buildInfo();
    this.gauge('cms_build_info', 'The build this instance runs: its package version and git commit (always 1)', ['version', 'commit']).set({ version, commit }, 1);
    this.readFailures = this.counter('cms_metrics_database_read_failures_total', 'Scrapes in which an environment\'s database did not answer within 1 s (its database-read series are absent from that scrape)', ['environment']);
  }

  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.existing<Counter<L>>(name, Counter) ?? new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  /** `collect` runs at each scrape (in-memory figures: set the gauge from them there). */
  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = [], collect?: (gauge: Gauge<L>) => void | Promise<void>): Gauge<L> {
    const found = this.existing<Gauge<L>>(name, Gauge);
    if (found) return found;
    return new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect ? { collect(this: Gauge<L>) { return collect(this); } } : {}),
    });
  }

  /**
   * A histogram for the hot paths (every request, every transaction): an observation adds to plain
   * numbers of its label set, where prom-client's own Histogram validates and hashes the label
   * object on every call (the largest item metrics added to a CPU profile of a light request,
   * docs/performance.md). The caller finds a label set's series by a key of its own (`get`, else
   * `create`) and observes into it; the registry formats the counts at scrape time, like its own.
   * With `counter`, each label set's count is also a counter of that name (the requests counter
   * beside their durations).
   */
  countedHistogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: readonly number[], counter?: { name: string; help: string }): CountedHistogram<L> {
    const histogram = new CountedHistogram<L>(labelNames, buckets);
    this.registry.registerMetric(collected(name, help, 'histogram', () => histogram.samples(name)));
    if (counter) this.registry.registerMetric(collected(counter.name, counter.help, 'counter', () => histogram.counts()));
    return histogram;
  }

  /**
   * A counter whose value is a count kept elsewhere (it must only grow), read at each scrape: one
   * number, or with `labelNames` one value per label set (`[{labels, value}]`).
   */
  counterFrom<L extends string = never>(name: string, help: string, read: () => number | readonly LabelledCount<L>[], labelNames: readonly L[] = []): void {
    if (this.registry.getSingleMetric(name)) return;
    const seen = new Map<string, number>();
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect(this: Counter<L>) {
        const now = read();
        for (const { labels, value } of typeof now === 'number' ? [{ labels: {} as Partial<Record<L, string>>, value: now }] : now) {
          const key = JSON.stringify(labels);
          const before = seen.get(key);
          // A label set is shown from its first scrape on, at 0 too (an absent series is no figure).
          if (before === undefined || value > before) this.inc(labels, Math.max(0, value - (before ?? 0)));
          seen.set(key, Math.max(before ?? 0, value));
        }
      },
    });
  }

  /**
   * Gauges read from every open environment's database at each scrape (the `environment` label is
   * added to each sample). A read must be a few index probes, never a scan: it runs per scrape.
   */
  readDatabases(read: DatabaseReader): void {
    this.readers.push(read);
  }

  /** Where readDatabases finds the open environments (Environments binds itself when it opens). */
  bindEnvironments(list: () => Iterable<EnvironmentDb>): void {
    this.environments = list;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text: database reads first (bounded), then every series' collect. */
  async scrape(): Promise<string> {
    if (this.readers.length > 0) await this.readAll();
    return this.registry.metrics();
  }

  private async readAll(): Promise<void> {
    const deadline = performance.now() + DATABASE_READ_DEADLINE_MS;
    const results = await Promise.all(
      [...this.environments()].map(async ({ name, db }) => {
        const samples = await withinDeadline(Promise.all(this.readers.map((read) => read(db))), deadline - performance.now());
        if (samples === undefined) this.readFailures.inc({ environment: name });
        return samples === undefined ? [] : samples.flat().map((s) => ({ ...s, labels: { ...s.labels, environment: name } }));
      }),
    );
    for (const gauge of this.readGauges) gauge.reset();
    for (const { gauge, labels, value } of results.flat()) {
      this.readGauges.add(gauge);
      gauge.set(labels, value);
    }
  }

  private existing<T extends Metric<string>>(name: string, kind: abstract new (...args: never[]) => Metric<string>): T | undefined {
    const found = this.registry.getSingleMetric(name);
    if (found && !(found instanceof kind)) throw new Error(`metric ${name} is already registered as another type`);
    return found as T | undefined;
  }
}

/** One label set's counts in a CountedHistogram: observations per bucket (not cumulative), the last beyond the largest bound. */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  count: number;
  sum: number;
  readonly buckets: number[];
}

interface CollectedSample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** See `Metrics.countedHistogram`. The label sets are bounded by the caller (routes, environments). */
export class CountedHistogram<L extends string> {
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    private readonly labelNames: readonly L[],
    private readonly bounds: readonly number[],
  ) {}

  /** The series of one label set by its key (its values joined), once `create` made it. */
  get(key: string): HistogramSeries | undefined {
    return this.series.get(key);
  }

  /** A label set's series at zero, under `key`. */
  create(key: string, labels: Readonly<Record<L, string>>): HistogramSeries {
    const own: Record<string, string> = {};
    for (const name of this.labelNames) own[name] = labels[name];
    const s: HistogramSeries = { labels: own, count: 0, sum: 0, buckets: new Array<number>(this.bounds.length + 1).fill(0) };
    this.series.set(key, s);
    return s;
  }

  observe(s: HistogramSeries, value: number): void {
    s.count++;
    s.sum += value;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    s.buckets[i]!++;
  }

  counts(): CollectedSample[] {
    return [...this.series.values()].map((s) => ({ labels: s.labels, value: s.count }));
  }

  samples(name: string): CollectedSample[] {
    return [...this.series.values()].flatMap((s): CollectedSample[] => {
      let cumulative = 0;
      const buckets = this.bounds.map((le, i): CollectedSample => ({ labels: { ...s.labels, le }, value: (cumulative += s.buckets[i]!), metricName: `${name}_bucket` }));
      return [
        ...buckets,
        { labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${name}_bucket` },
        { labels: s.labels, value: s.sum, metricName: `${name}_sum` },
        { labels: s.labels, value: s.count, metricName: `${name}_count` },
      ];
    });
  }
}

/** A metric in the shape prom-client's Registry reads (`get()`), its values computed when scraped. */
function collected(name: string, help: string, type: 'counter' | 'histogram', values: () => CollectedSample[]) {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: metric.aggregator, values: values() }),
    reset: () => undefined,
  };
  return metric as unknown as Metric<string>;
}
