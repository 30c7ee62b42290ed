// GET /admin/health tests: an app whose integrations are all configured (so a fresh database is
// healthy), queue rows written straight into the store, the recorded history, and a database
// whose transactions can be made to hang.
import type { EnvironmentName } from '../../src/config.js';
import type { Db } from '../../src/platform/db/types.js';
import { createTestApp, type TestApp, type TestAppOptions } from './app.js';
import type { Person } from './identity.js';

export type Row = Record<string, any>;

/** Chat sign-in and realtime configured: the auth section is ok. */
export const CONFIGURED_ENV: Record<string, string> = {
  CHAT_OAUTH_CLIENT_ID: 'health-client',
  CHAT_OAUTH_CLIENT_SECRET: 'health-secret',
  CHAT_OAUTH_REDIRECT_URI: 'https://api.example.test/auth/chat/callback',
  PRODUCTION_REALTIME_SIGNING_SECRET: 'health-realtime-signing-secret-0123456789',
  PRODUCTION_REALTIME_URL: 'https://realtime.example.test',
  PRODUCTION_REALTIME_ANON_KEY: 'health-anon-key',
};

export function createHealthTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  return createTestApp({ ...options, env: { ...CONFIGURED_ENV, ...options.env } });
}

export const SECTIONS = ['overall', 'database', 'api', 'actions', 'queue', 'agents', 'evidence', 'auth', 'audit', 'events'] as const;

export async function health(t: TestApp, who: Person, url = '/admin/health') {
  const res = await t.app.inject({ url, headers: who.headers });
  return { res, body: res.json() as Row, requestId: String(res.headers['x-request-id']) };
}

export async function incidentRows(t: TestApp, env: EnvironmentName = 'production'): Promise<Row[]> {
  const { rows } = await t.db[env].query('select * from health_incidents order by id');
  return rows;
}

export async function healthState(db: Db): Promise<Row> {
  return (await db.query('select status, previous_status from health_state')).rows[0]!;
}

let reports = 0;
/** A report to hang queue rows on. */
export async function makeReport(db: Db): Promise<string> {
  const id = `HEALTH-${process.pid}-${++reports}`;
  await db.query(`insert into reports (report_id, reporter, reported, reason, notes, evidence) values ($1::text, '1', '2', 'Health', '', '')`, [id]);
  return id;
}

/** A report action in `status`, enqueued `ageS` seconds ago (claimed then too when processing). */
export async function makeAction(db: Db, reportId: string, status: string, ageS = 0): Promise<number> {
  const { rows } = await db.query<{ action_id: number }>(
    `insert into report_actions (report_id, kind, queue, status, attempts, claimed_at, created_at)
     values ($1::text, 'claim', 'operator', $2::text, case when $2::text = 'pending' then 0 else 1 end,
             case when $2::text = 'processing' then now() - make_interval(secs => $3::float8) end, now() - make_interval(secs => $3::float8))
     returning action_id`,
    [reportId, status, ageS],
  );
  return rows[0]!.action_id;
}

/** A pending user lookup delivery that fell due `ageS` seconds ago. */
export async function makeDueDelivery(db: Db, ageS: number): Promise<void> {
  await db.query(
    `insert into discipline_deliveries (kind, user_id, available_at, created_at)
     values ('user_lookup', $1::text, now() - make_interval(secs => $2::float8), now() - make_interval(secs => $2::float8))`,
    [String(700000000000000000 + ++reports), ageS],
  );
}

export async function clearQueues(db: Db): Promise<void> {
  await db.query('delete from report_actions');
  await db.query('delete from discipline_deliveries');
}

/**
 * The real database, whose transactions never start while `hanging` is set: what an exhausted
 * pool or a hung driver looks like to a caller. Single statements (the session lookup of
 * require_admin) still pass, so the request reaches the health handler. Counts the transactions
 * asked for.
 */
export function hangable(db: Db): Db & { hanging: boolean; transactions: number } {
  const wrapper: Db & { hanging: boolean; transactions: number } = {
    ...db,
    hanging: false,
    transactions: 0,
    transaction: (fn) => {
      wrapper.transactions++;
      return wrapper.hanging ? new Promise<never>(() => undefined) : db.transaction(fn);
    },
  };
  return wrapper;
}
