// GET /admin/health (spec: System administration; Resources, "Health history entry"). Ten
// sections, each ok, warn or error (what each measures and its thresholds: health-checks.ts and
// docs/operations.md), and the incident history, recorded when the overall status changes.
//
// It answers whatever the database does. Its statements run in one transaction whose statements
// PostgreSQL cancels past HEALTH_STATEMENT_TIMEOUT_MS (a lock held elsewhere, an overloaded
// server), and the whole is raced against HEALTH_DEADLINE_MS, so an exhausted pool or a hung
// driver still yields an answer: the database section in error, the sections it feeds marked not
// measured, overall error. A database failure is never a 500 here. Work abandoned at the deadline
// finishes (or is cancelled) on its own; its late result is ignored.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config, EnvironmentName } from '../config.js';
import { loadMigrations } from '../platform/db/migrate.js';
import type { Environment } from '../platform/environments.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import { PROJECT_ROOT } from '../platform/paths.js';
import {
  HEALTH_COUNT_CAP,
  HEALTH_DEADLINE_MS,
  HEALTH_INCIDENTS_LIMIT,
  HEALTH_STATEMENT_TIMEOUT_MS,
  judgeSections,
  notOk,
  worstOf,
  type RealtimeStats,
} from './health-checks.js';
import { ADMIN_EVENT_TYPES, boundStatements, readHealth, recordHealth, type HealthIncident, type HealthReading } from './health-queries.js';
import { HealthResult, type HealthSections } from './health-schemas.js';
import { registerHealthMetrics } from './metrics.js';
import { retentionHealth, type RetentionHealth } from './retention/health.js';

export interface AdminHealthOptions {
  /** The service's config, for what is not per environment (chat-platform sign-in). */
  config?: Pick<Config, 'chatOAuth'>;
  /** This instance's realtime hub and broadcasts, as counted since it started. */
  realtime?: () => RealtimeStats;
  /** The retention as it applies to an environment (src/admin/retention/health.ts). */
  retention?: (env: EnvironmentName) => RetentionHealth;
}

const VERSION = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Less time than this left after a failed read: not worth a write (a timer may also fire a hair early). */
const RECORD_MIN_MS = 100;

type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };

/** `work`'s result, or why there is none by `ms` from now; never throws, never waits longer. */
async function withinDeadline<T>(work: Promise<T>, ms: number): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome<T>>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `no answer within ${HEALTH_DEADLINE_MS} ms (the pool is exhausted or the database is hung)` }), Math.max(0, Math.ceil(ms)));
  });
  try {
    return await Promise.race([work.then((value) => ({ ok: true as const, value }), (err: Error) => ({ ok: false as const, reason: `database error: ${err.message}` })), late]);
  } finally {
    clearTimeout(timer);
  }
}

interface HealthContext {
  env: Environment;
  correlationId: string;
  oauthConfigured: boolean | null;
  migrationsExpected: number;
  realtime: RealtimeStats | null;
  retention: RetentionHealth;
}

/** Measures, judges and records in one bounded transaction; falls back to recording an error alone. */
async function checkHealth(ctx: HealthContext): Promise<HealthResult> {
  const { env, correlationId } = ctx;
  const deadline = performance.now() + HEALTH_DEADLINE_MS;
  const measured: { reading?: HealthReading; roundTripMs: number | null; queryMs: number | null } = { roundTripMs: null, queryMs: null };
  const judge = (failure: string | undefined): HealthSections =>
    judgeSections({
      reading: measured.reading,
      failure,
      checkedAt: measured.reading?.read_at ?? new Date().toISOString(),
      store: env.db.kind,
      roundTripMs: measured.roundTripMs,
      queryMs: measured.queryMs,
      migrationsExpected: ctx.migrationsExpected,
      staleTimeoutMs: env.staleTimeoutMs,
      apiKeyConfigured: env.config.apiKey !== undefined,
      oauthConfigured: ctx.oauthConfigured,
      realtimeConfigured: Boolean(env.config.realtimeSigningSecret),
      realtime: ctx.realtime,
      version: VERSION,
      backup: env.backup,
      replicas: env.replicas?.status() ?? [],
      retention: ctx.retention,
    });
  const record = (sections: HealthSections, readAt: string | null) => ({
    status: worstOf(Object.values(sections).map((s) => s.status)),
    sections: notOk(sections),
    readAt,
    correlationId,
    limit: HEALTH_INCIDENTS_LIMIT,
  });

  const first = await withinDeadline(
    env.db.transaction(async (tx) => {
      const started = performance.now();
      await boundStatements(tx, HEALTH_STATEMENT_TIMEOUT_MS);
      const bounded = performance.now();
      const reading = await readHealth(tx, { countCap: HEALTH_COUNT_CAP, adminEventTypes: ADMIN_EVENT_TYPES });
      Object.assign(measured, { reading, roundTripMs: bounded - started, queryMs: performance.now() - bounded });
      const sections = judge(undefined);
      return { sections, incidents: await recordHealth(tx, record(sections, reading.read_at)) };
    }),
    deadline - performance.now(),
  );
  if (first.ok) return answer(measured.reading!.read_at, first.value.sections, first.value.incidents);

  // The database failed or is slow: the answer says so, and the change to error is recorded if
  // the database takes a write in the time that is left (a lock on one table, say).
  const sections = judge(first.reason);
  const checkedAt = measured.reading?.read_at ?? new Date().toISOString();
  const left = deadline - performance.now();
  const second =
    left >= RECORD_MIN_MS
      ? await withinDeadline(
          env.db.transaction(async (tx) => {
            await boundStatements(tx, Math.min(HEALTH_STATEMENT_TIMEOUT_MS, left));
            return recordHealth(tx, record(sections, null));
          }),
          left,
        )
      : ({ ok: false, reason: 'no time left' } as const);
  if (!second.ok) sections.database.reasons.push(`incident history not available: ${second.reason}`);
  return answer(checkedAt, sections, second.ok ? second.value : []);
}

function answer(checkedAt: string, sections: HealthSections, incidents: HealthIncident[]): HealthResult {
  const overall = { status: worstOf(Object.values(sections).map((s) => s.status)), sections: notOk(sections) };
  return { success: true, checked_at: checkedAt, overall, ...sections, incidents };
}

export const adminHealthRoutes: FastifyPluginAsyncTypebox<AdminHealthOptions> = async (app, options) => {
  const migrationsExpected = loadMigrations().at(-1)?.version ?? 0;
  const oauthConfigured = options.config === undefined ? null : options.config.chatOAuth !== undefined;
  registerHealthMetrics(app.metrics, options.realtime);
  // One computation in flight per environment on this instance: a request that arrives while one
  // runs gets its answer, read after the request arrived or at most one computation earlier. A
  // dashboard full of admins polling costs the database one computation at a time, and while the
  // database hangs, at most one abandoned computation per instance waits on it.
  const inFlight = new Map<Environment, Promise<HealthResult>>();
  const shared = (env: Environment, correlationId: string): Promise<HealthResult> => {
    let running = inFlight.get(env);
    if (running === undefined) {
      running = checkHealth({ env, correlationId, oauthConfigured, migrationsExpected, realtime: options.realtime?.() ?? null, retention: options.retention?.(env.name) ?? retentionHealth(undefined, false) }).finally(() => inFlight.delete(env));
      inFlight.set(env, running);
    }
    return running;
  };
  app.get(
    '/admin/health',
    {
      config: { auth: 'session', admin: 'admin_health' },
      schema: {
        tags: ['Administration'],
        operationId: 'getHealth',
        summary: 'Health of the service: ten sections, each ok, warn or error, and the incident history',
        description:
          'Sections: overall (the worst of the others), database, api, actions (report action queue), queue (discipline ' +
          'deliveries and their sweeps), agents, evidence, auth, audit, events. An incident is recorded once per change of ' +
          `the overall status. Answers within ${HEALTH_DEADLINE_MS} ms even when the database does not: then the database ` +
          'section is error and the sections it feeds say they were not measured. Concurrent requests on one instance share one computation.',
        response: { 200: HealthResult, ...errorResponses(...COMMON_ERRORS) },
      },
    },
    (request) => shared(request.environment, request.id),
  );
};
