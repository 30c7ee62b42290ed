// The punishment tests' app and tools, shared by punishments.test.ts (creation) and
// punishment-changes.test.ts (reads, changes, revokes): one place for the seeding and row readers.
import { expect } from 'vitest';
import { refuseInserts } from './failures.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './app.js';
import { chatId, signedIn, type Person } from './identity.js';

export type Row = Record<string, any>;
export const key = { authorization: PRODUCTION_KEY, host: 'localhost' };
export const ID = /^[A-Z]{2}[0-9][A-Z]{2}[0-9]$/;
/** Deliveries for this user fail mid-transaction (the atomicity test). */
export const REFUSED_USER = '999000000000000001';
/** Punishments for this user collide on their id as often as test_collisions.remaining says. */
export const COLLIDING_USER = '999000000000000002';
export const failure = (error: string, code: string) => ({ success: false, error, code });

export interface PunishmentsApp {
  t: TestApp;
  /** manage_punishments: issues by default. */
  manager: Person;
  supervisor: Person;
  /** view_punishments only: reads by default. */
  viewer: Person;
  /** Below manage_punishments. */
  clearance3: Person;
}

/** A fresh app, the people who act on it, and the triggers the creation tests fail on. */
export async function openPunishmentsApp(): Promise<PunishmentsApp> {
  const t = await createTestApp();
  const manager = await signedIn(t, { rank: 'Agent', clearance: 4, name: 'Mona Manager' });
  const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4, name: 'Sam Supervisor' });
  const viewer = await signedIn(t, { rank: 'Agent', clearance: 2 });
  const clearance3 = await signedIn(t, { rank: 'Senior Agent', clearance: 3 });
  await refuseInserts(t.db.production, 'refuse_deliveries', `new.user_id = '${REFUSED_USER}'`, ['discipline_deliveries']);
  await t.db.production.exec(`
    -- Forces generated ids onto one that is taken, so the insert meets a real unique conflict.
    create table test_collisions (remaining int not null);
    insert into test_collisions values (0);
    create function force_collision() returns trigger language plpgsql as $$
    begin
      if new.user_id = '${COLLIDING_USER}' and (select remaining from test_collisions) > 0 then
        update test_collisions set remaining = remaining - 1;
        new.punishment_id := 'ZZ9ZZ9';
      end if;
      return new;
    end $$;
    create trigger force_collision before insert on punishments for each row execute function force_collision();
  `);
  return { t, manager, supervisor, viewer, clearance3 };
}

/**
 * Requests and row readers over the app `current` returns. A getter, because the tools are made
 * when a test file loads and the app only exists once its beforeAll has run.
 */
export function punishmentTools(current: () => PunishmentsApp) {
  const q = async (sql: string, values: unknown[] = []) => (await current().t.db.production.query(sql, values)).rows as Row[];
  const inject = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string>, payload?: unknown) =>
    current().t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const issue = (body: Row, who: Person = current().manager) => inject('POST', '/punishments', who.headers, body);
  const get = (url: string, who: Person = current().viewer) => inject('GET', url, who.headers);
  const patch = (id: string, body: Row, who: Person = current().manager) => inject('PATCH', `/punishments/${id}`, who.headers, body);
  const revoke = (id: string, body: unknown, who: Person = current().manager) => inject('POST', `/punishments/${id}/revoke`, who.headers, body);

  /** Issues a punishment through the API and returns it. */
  async function issued(body: Row = {}): Promise<Row> {
    const res = await issue({ user_id: chatId(), reason: 'Spamming', ...body });
    expect(res.statusCode).toBe(201);
    return res.json().punishment;
  }

  async function rowsOf(id: string) {
    const [stored] = await q('select * from punishments where punishment_id = $1', [id]);
    // creation_order (migration 0019) only orders the list, and deleted_report (0025) links a
    // punishment to a deleted report's pre-image: neither is in any answer, audit row or event.
    const { creation_order: _order, deleted_report: _deleted, ...punishment } = stored ?? {};
    return {
      punishment: stored && punishment,
      audit: await q('select actor_kind, actor_chat_id, action, target, reason, before, after, correlation_id from audit_log where target = $1 order by id', [id]),
      events: await q(
        `select type, actor_kind, actor_chat_id, report_id, before, after, data, is_supervisor, correlation_id
         from events where data->>'punishment_id' = $1 order by id`,
        [id],
      ),
      deliveries: await q('select kind, user_id, status, requested_by from discipline_deliveries where punishment_id = $1 order by item_id', [id]),
    };
  }

  /** Every table a punishment route writes, counted: a refused request leaves these as they were. */
  const totals = async () =>
    (await q(`select (select count(*) from punishments)::int as punishments,
        (select count(*) from audit_log where action like 'punishment.%')::int as audit,
        (select count(*) from events where type like 'punishment.%')::int as events,
        (select count(*) from discipline_deliveries)::int as deliveries,
        (select max(updated_at) from punishments) as last_update`))[0]!;

  let reports = 0;
  async function report(isSupervisor = false): Promise<string> {
    const id = `SVC-CASE-${String(++reports).padStart(5, '0')}`;
    await q(`insert into reports (report_id, reporter, reported, reason, notes, evidence, is_supervisor) values ($1, 'a', 'b', 'Spam', '', '', $2)`, [id, isSupervisor]);
    return id;
  }

  return { q, inject, issue, get, patch, revoke, issued, rowsOf, totals, report };
}
