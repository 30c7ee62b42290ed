// Shared by the report action queue tests (test/action-queue*.test.ts): the app, queue rows
// written behind its back, and readers of the rows and events the routes write.
import { refuseInserts } from './failures.js';
import { createTestApp, PRODUCTION_KEY, queueNotificationsDelivered, type TestApp } from './app.js';

export type Row = Record<string, any>;

export const key = { authorization: PRODUCTION_KEY };
export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
export const ids = (body: Row) => body.actions.map((a: Row) => a.action_id);
export const refusal = (error: string, code: string) => ({ success: false, error, code });
export const basics = (reportId: string, isSupervisor = false) => ({
  report_id: reportId,
  status: 'Open',
  reporter: '300000000000000001',
  reported: '300000000000000002',
  reporter_name: 'quietstorm',
  reported_name: 'NightOwl_88',
  reason: 'Harassment',
  assigned_agent: null,
  is_supervisor: isSupervisor,
  thread_id: 'T-1',
});

export async function createQueueTestApp(): Promise<TestApp> {
  // A one-minute stale timeout, so a claim backdated by two minutes is stale.
  const t = await createTestApp({ env: { QUEUE_STALE_TIMEOUT_SECONDS: '60' } });
  // A mid-transaction failure on demand: events about reports whose id starts with FAIL- cannot
  // be written, after the earlier writes of their transaction have gone through.
  await refuseInserts(t.db.production, 'refuse_fail_reports', `new.report_id like 'FAIL-%'`, ['events']);
  return t;
}

/** Pickups and lists see the whole queue: each test starts from an empty one. */
export async function emptyQueue(t: TestApp): Promise<void> {
  await t.db.production.query('delete from report_actions');
}

export interface ActionSeed {
  queue?: 'operator' | 'supervisor';
  kind?: string;
  status?: string;
  attempts?: number;
  /** Seconds since the claim (a processing action is claimed now by default). */
  claimedAgo?: number;
  result_note?: string | null;
  last_error?: string | null;
}

/** Seeding, reading and request helpers on the app `app()` returns (built later, in beforeAll). */
export function queueHelpers(app: () => TestApp) {
  let seq = 0;

  async function makeReport(seed: { prefix?: string; is_supervisor?: boolean } = {}): Promise<string> {
    const id = `${seed.prefix ?? 'AQ'}-${process.pid}-${++seq}`;
    await app().db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence, reporter_name, reported_name, is_supervisor, thread_id)
       values ($1::text, '300000000000000001', '300000000000000002', 'Harassment', '', '', 'quietstorm', 'NightOwl_88', $2::boolean, 'T-1')`,
      [id, seed.is_supervisor ?? false],
    );
    return id;
  }

  /** An action written straight into the store; each one is younger than the one made before it. */
  async function makeAction(reportId: string, seed: ActionSeed = {}): Promise<number> {
    const status = seed.status ?? 'pending';
    const claimedAgo = seed.claimedAgo ?? (status === 'pending' ? null : 0);
    const { rows } = await app().db.production.query<{ action_id: number }>(
      `insert into report_actions (report_id, kind, queue, status, payload, attempts, result_note, last_error, claimed_at, completed_at, created_at, updated_at)
       values ($1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::int, $7::text, $8::text,
         now() - make_interval(secs => $9::double precision),
         case when $4::text in ('success', 'failed', 'cancelled') then now() end,
         now() - make_interval(secs => $10::double precision), now() - make_interval(secs => $10::double precision))
       returning action_id`,
      [
        reportId,
        seed.kind ?? 'claim',
        seed.queue ?? 'operator',
        status,
        JSON.stringify({ reason: 'Because' }),
        seed.attempts ?? (status === 'pending' ? 0 : 1),
        seed.result_note ?? null,
        seed.last_error ?? null,
        claimedAgo,
        100_000 - ++seq,
      ],
    );
    return rows[0]!.action_id;
  }

  const actionRow = async (id: number) =>
    (await app().db.production.query<Row>('select * from report_actions where action_id = $1::bigint', [id])).rows[0]!;
  const events = async (reportId: string) =>
    (
      await app().db.production.query<Row>(
        'select type, actor_kind, actor_chat_id, before, after, data, is_supervisor, correlation_id from events where report_id = $1::text order by id',
        [reportId],
      )
    ).rows;

  /** A GET; a pickup waits until the app has heard of the rows the test wrote behind its back. */
  const get = async (url: string, headers: Record<string, string> = key) => {
    if (url.startsWith('/actions/next')) await queueNotificationsDelivered(app());
    return app().app.inject({ method: 'GET', url, headers });
  };
  const post = (url: string, headers: Record<string, string>, payload?: unknown) =>
    app().app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const complete = (id: number | string, payload: unknown, headers: Record<string, string> = key) => post(`/actions/${id}/complete`, headers, payload);
  const requeue = (id: number | string, headers: Record<string, string> = key) => post(`/actions/${id}/requeue`, headers);

  return { makeReport, makeAction, actionRow, events, get, complete, requeue };
}
