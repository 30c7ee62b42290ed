// Administrators and the trail of admin mutations, for the admin route tests.
import { expect } from 'vitest';
import type { EnvironmentName } from '../../src/config.js';
import type { TestApp } from './app.js';
import { signedIn, type Person, type PersonOptions } from './identity.js';

/** A signed-in agent on the active admin allowlist: a clearance-5 Director unless told otherwise. */
export function admin(t: TestApp, options: PersonOptions = {}): Promise<Person> {
  return signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true, ...options });
}

export interface AuditRow {
  id: number;
  actor_kind: string;
  actor_chat_id: string | null;
  action: string;
  target: string | null;
  reason: string | null;
  before: unknown;
  after: unknown;
  correlation_id: string;
}

export interface EventRow {
  type: string;
  actor_kind: string;
  actor_chat_id: string | null;
  report_id: string | null;
  before: unknown;
  after: unknown;
  data: Record<string, unknown> | null;
  correlation_id: string;
}

/** The admin audit rows and events one request wrote (by its correlation id). */
export async function trailOf(t: TestApp, correlationId: string, env: EnvironmentName = 'production'): Promise<{ audit: AuditRow[]; events: EventRow[] }> {
  const db = t.db[env];
  const audit = await db.query<AuditRow>('select * from audit_log where correlation_id = $1::text order by id', [correlationId]);
  const events = await db.query<EventRow>('select * from events where correlation_id = $1::text order by id', [correlationId]);
  return { audit: audit.rows, events: events.rows };
}

/** Row counts of the tables an admin mutation may write: compared before and after a refusal. */
export async function trailCounts(t: TestApp, env: EnvironmentName = 'production'): Promise<Record<string, number>> {
  const { rows } = await t.db[env].query<{ audit: number; events: number; allowlist: number; actions: number; timeline: number }>(
    `select (select count(*)::int from audit_log) as audit, (select count(*)::int from events) as events,
            (select count(*)::int from admin_allowlist where active) as allowlist,
            (select count(*)::int from report_actions) as actions, (select count(*)::int from report_timeline) as timeline`,
  );
  return rows[0]!;
}

/** Asserts the one audit row and the one event of the same name an admin mutation must write. */
export async function expectAdminTrail(
  t: TestApp,
  correlationId: string,
  expected: { action: string; actor: string; target: string | null; reason: string; env?: EnvironmentName },
): Promise<{ audit: AuditRow; event: EventRow }> {
  const { audit, events } = await trailOf(t, correlationId, expected.env);
  const adminEvents = events.filter((e) => e.type === expected.action);
  expect(audit).toHaveLength(1);
  expect(adminEvents).toHaveLength(1);
  expect(audit[0]).toMatchObject({ actor_kind: 'agent', actor_chat_id: expected.actor, action: expected.action, target: expected.target, reason: expected.reason });
  expect(adminEvents[0]).toMatchObject({ actor_kind: 'agent', actor_chat_id: expected.actor, data: expect.objectContaining({ reason: expected.reason }) });
  return { audit: audit[0]!, event: adminEvents[0]! };
}
