export interface MeasureOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** autocannon replaces `[<id>]` in the body with a fresh id per request (unique keys). */
  idReplacement?: boolean;
  /** The path (and query) of each request, called once per request: varied ids, offsets, filters. */
  path?: () => string;
  /** Headers added to each request, called once per request (an Idempotency-Key of its own). */
  headersFor?: () => Record<string, string>;
  /** Defaults to the run's --connections. */
  connections?: number;
  /** Seconds; defaults to the run's --duration. */
  duration?: number;
  /** Label used in the run log and in errors. */
  label?: string;
}

export interface Measurement {
  label: string;
  url: string;
  connections: number;
  duration: number;
  /** Mean of autocannon's per-second request samples. */
  reqPerSec: number;
  total: number;
  latencyMs: { mean: number; p50: number; p95: number; p99: number; max: number };
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  /** Cores' worth of CPU other processes on the machine used meanwhile (time-weighted mean). */
  otherCores: number;
  /** Time spent waiting for other processes to go quiet before the runs. */
  quietWaitMs: number;
}

export interface Comparison {
  a: Measurement;
  b: Measurement;
  /** a.reqPerSec / b.reqPerSec over all rounds. */
  ratio: number;
  /** The same ratio round by round: its spread shows how steady the machine was. */
  roundRatios: number[];
  /** Rounds redone because other processes loaded the machine meanwhile. */
  discardedRounds: number;
}

export type Status = 'PASS' | 'MISS' | 'INFO';

export interface ResultLine {
  scenario: string;
  metric: string;
  value: number;
  unit: string;
  /** Human-readable goal, e.g. ">= 0.8"; absent for information only. */
  goal?: string;
  status: Status;
}

export interface RunOptions {
  only: string[] | null;
  duration: number;
  connections: number;
  warmup: number;
  /** Alternating rounds that split --duration in compare(). */
  rounds: number;
  /** Seconds to wait at most, before each load run, for other processes to go quiet; 0 = don't. */
  quietWait: number;
  pg: string | null;
}

export interface Context {
  options: RunOptions;
  /** Base URL of the shared service instance (production host), e.g. http://127.0.0.1:1234 */
  serviceUrl: string;
  /** Base URL of the bare Fastify hello-world. */
  baselineUrl: string;
  apiKey: string;
  demoApiKey: string;
  /** 'pglite' or 'postgres' for the shared service instance. */
  store: 'pglite' | 'postgres';
  measure(opts: MeasureOptions): Promise<Measurement>;
  /** Measures a and b in alternating rounds (same total duration each); ratio = a/b. */
  compare(a: MeasureOptions, b: MeasureOptions): Promise<Comparison>;
  ratio(a: number, b: number): number;
  /** Builds a result line; status is derived from `ok` when a goal is given. */
  line(metric: string, value: number, unit: string, goal?: { text: string; ok: boolean }): ResultLine;
  log(message: string): void;
}

export interface Scenario {
  name: string;
  description: string;
  /** Which shared children the scenario uses; the harness starts only what selected scenarios need. */
  needs: Array<'service' | 'baseline'>;
  /** Runs only when named in --only (a long run, such as the soak, stays out of the default set). */
  onlyWhenNamed?: boolean;
  run(ctx: Context): Promise<ResultLine[]>;
}
