// The retention in GET /admin/health (database section): its setting and what this instance's
// last pass saw. Only production is erased for its age: the demo answers days null.
import { Type, type Static } from 'typebox';
import { nullableTimestamp } from '../../platform/http/schemas.js';
import type { RetentionScheduler } from './scheduler.js';

const nullableInteger = (description: string) => Type.Unsafe<number | null>({ type: ['integer', 'null'], description });

export const RetentionHealth = Type.Object(
  {
    days: nullableInteger('RETENTION_DAYS where it applies; null: nothing is erased for its age (unset, or the demo environment)'),
    interval_s: Type.Number({ description: 'Seconds between two passes of each instance' }),
    last_run_at: nullableTimestamp("When this instance last finished a pass (whoever held the retention's lock)"),
    cases_erased: Type.Integer({ description: 'Closed cases this instance erased since it started' }),
    cases_waiting: nullableInteger('Closed cases past the retention not erased yet, after the last pass (counting stops at 10,000)'),
    cases_held: nullableInteger("Of those, the ones this instance's last pass skipped: someone in the case has a punishment in force"),
    last_error_at: nullableTimestamp('The latest failure of a pass or of one case (kept after later successes: compare the times)'),
    last_error: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false, description: "Erasure of closed cases' personal data for their age (RETENTION_DAYS; docs/personal-data.md)" },
);
export type RetentionHealth = Static<typeof RetentionHealth>;

export function retentionHealth(scheduler: RetentionScheduler | undefined, applies: boolean): RetentionHealth {
  const s = scheduler?.status;
  const on = applies && scheduler?.days !== undefined;
  return {
    days: on ? scheduler!.days! : null,
    interval_s: (scheduler?.intervalMs ?? 0) / 1000,
    last_run_at: on ? (s?.lastRunAt?.toISOString() ?? null) : null,
    cases_erased: on ? (s?.casesErased ?? 0) : 0,
    cases_waiting: on ? (s?.casesWaiting ?? null) : null,
    cases_held: on ? (s?.casesHeld ?? null) : null,
    last_error_at: on ? (s?.lastErrorAt?.toISOString() ?? null) : null,
    last_error: on ? (s?.lastError ?? null) : null,
  };
}
