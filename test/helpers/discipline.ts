// Discipline queue rows written straight into the store, so that a test sets status, attempts and
// timestamps itself, and the readers the tests assert with. The functions take the app first (they
// fit discipline-next and -pending-lookup tests); completionTools binds them for discipline-completion and -profile tests.
import { expect } from 'vitest';
import { refuseInserts } from './failures.js';
import { createTestApp, PRODUCTION_KEY, queueNotificationsDelivered, type TestApp } from './app.js';
import { chatId } from './identity.js';

export type Row = Record<string, any>;
export const key = { authorization: PRODUCTION_KEY };

let seq = 0;
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** A fresh id of the AA0AA0 form. */
export function punishmentId(): string {
  const n = ++seq;
  return `${LETTERS[n % 26]}${LETTERS[Math.floor(n / 26) % 26]}${n % 10}DC${Math.floor(n / 10) % 10}`;
}

export async function makeReport(t: TestApp): Promise<string> {
  const id = `DC-${process.pid}-${++seq}`;
  await t.db.production.query(
    `insert into reports (report_id, reporter, reported, reason, notes, evidence) values ($1::text, '300000000000000001', '300000000000000002', 'Harassment', '', '')`,
    [id],
  );
  return id;
}

export interface PunishmentSeed {
  reportId?: string | null;
  /** Seconds from now; negative is past. */
  expiresIn?: number;
}

export async function makePunishment(t: TestApp, seed: PunishmentSeed = {}): Promise<Row> {
  const { rows } = await t.db.production.query(
    `insert into punishments (punishment_id, user_id, reason, report_id, expires_at)
     values ($1::text, $2::text, 'Spawn killing', $3::text, case when $4::double precision is null then null else now() + make_interval(secs => $4::double precision) end)
     returning *`,
    [punishmentId(), chatId(), seed.reportId ?? null, seed.expiresIn ?? null],
  );
  return rows[0]!;
}

export interface ItemSeed {
  kind?: 'issue' | 'revoke' | 'expire' | 'user_lookup';
  /** The item's punishment; a fresh one (of reportId) when absent, none for a user_lookup. */
  punishment?: Row;
  reportId?: string | null;
  userId?: string;
  /** pending unless given. */
  status?: string;
  /** 0 unless given. */
  attempts?: number;
  lastError?: string | null;
  /** Seconds from now for available_at (and created_at when past); now when absent. */
  availableIn?: number;
  /** Seconds ago the item was claimed, completed, last updated; null (updated: now) when absent. */
  claimedAgo?: number;
  completedAgo?: number;
  updatedAgo?: number;
}

/** An item written straight into the queue; a pending issue of a fresh punishment by default. */
export async function makeItem(t: TestApp, seed: ItemSeed = {}): Promise<Row> {
  const kind = seed.kind ?? 'issue';
  const punishment = kind === 'user_lookup' ? null : (seed.punishment ?? (await makePunishment(t, { reportId: seed.reportId ?? null })));
  const { rows } = await t.db.production.query(
    `insert into discipline_deliveries (kind, punishment_id, user_id, status, attempts, last_error, available_at, created_at, claimed_at, completed_at, updated_at)
     values ($1::text, $2::text, $3::text, $4::text, $5::int, $6::text,
             now() + make_interval(secs => $7::double precision),
             now() + make_interval(secs => least($7::double precision, 0)),
             case when $8::double precision is null then null else now() - make_interval(secs => $8::double precision) end,
             case when $9::double precision is null then null else now() - make_interval(secs => $9::double precision) end,
             now() - make_interval(secs => $10::double precision))
     returning *`,
    [
      kind,
      punishment?.punishment_id ?? null,
      seed.userId ?? punishment?.user_id ?? chatId(),
      seed.status ?? 'pending',
      seed.attempts ?? 0,
      seed.lastError ?? null,
      seed.availableIn ?? 0,
      seed.claimedAgo ?? null,
      seed.completedAgo ?? null,
      seed.updatedAgo ?? 0,
    ],
  );
  return rows[0]!;
}

/** The discipline queue is global: the pickup and list tests empty it first. */
export const emptyQueue = (app: TestApp) => app.db.production.query('delete from discipline_deliveries');
/** A pickup, once the app has heard of the rows this file wrote behind its back. */
export const next = async (app: TestApp, headers: Record<string, string> = key) => {
  await queueNotificationsDelivered(app);
  return app.app.inject({ method: 'GET', url: '/discipline/next', headers });
};

export const itemRow = async (t: TestApp, id: number) => (await t.db.production.query('select * from discipline_deliveries where item_id = $1::bigint', [id])).rows[0] as Row;
export const itemEvents = async (t: TestApp, id: number) =>
  (
    await t.db.production.query(
      `select type, actor_kind, actor_chat_id, report_id, before, after, data, correlation_id from events where (data->>'item_id')::bigint = $1::bigint order by id`,
      [id],
    )
  ).rows as Row[];
export const profileRow = async (t: TestApp, id: string) => (await t.db.production.query('select * from chat_profiles where chat_id = $1::text', [id])).rows[0] as Row | undefined;
export const secondsFromNow = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;

/** The item is as seeded and has no event: the request changed nothing. */
export async function unchanged(t: TestApp, item: Row) {
  expect(await itemRow(t, item.item_id)).toEqual(item);
  expect(await itemEvents(t, item.item_id)).toEqual([]);
}

/** Events with this note, or about this user, fail to insert: a failure late in a transaction. */
export const REFUSED_NOTE = 'REFUSE-THE-EVENT';
export const REFUSED_USER = '999000000000000001';

/** The app of the completion and profile tests, its events refusable by REFUSED_NOTE and REFUSED_USER. */
export async function openCompletionApp(): Promise<TestApp> {
  const t = await createTestApp();
  await refuseInserts(t.db.production, 'refuse_marked_events', `new.data->>'note' = '${REFUSED_NOTE}' or new.data->>'user_id' = '${REFUSED_USER}'`, ['events']);
  return t;
}

const TERMINAL = ['success', 'failed', 'cancelled'];

/**
 * The seeding and readers bound to the app `current` returns (a getter: the tools are made when a
 * test file loads, the app in its beforeAll). Items are last updated an hour ago, so a write shows.
 */
export function completionTools(current: () => TestApp) {
  return {
    makeReport: () => makeReport(current()),
    /** By default an issue delivery the bot has claimed once. */
    makeItem: (seed: ItemSeed = {}) => {
      const status = seed.status ?? 'processing';
      return makeItem(current(), {
        attempts: 1,
        ...seed,
        status,
        ...(status === 'processing' ? { claimedAgo: 5 } : {}),
        ...(TERMINAL.includes(status) ? { completedAgo: 60 } : {}),
        updatedAgo: 3600,
      });
    },
    itemRow: (id: number) => itemRow(current(), id),
    itemEvents: (id: number) => itemEvents(current(), id),
    profileRow: (id: string) => profileRow(current(), id),
    unchanged: (item: Row) => unchanged(current(), item),
    post: (url: string, payload?: unknown, headers: Record<string, string> = key) =>
      current().app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload: payload as object }) }),
  };
}
