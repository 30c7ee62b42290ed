// A punishment write's answer is read inside its transaction (issue 38, finding 6): it shows what
// GET /punishments/<id> shows the same caller at that moment, and a flag committed between the
// write's check and its answer can neither make a committed change answer 403 nor show a caller
// below supervisor rank a punishment citing a report flagged before the answer was read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_ORIGIN, type TestApp } from './helpers/app.js';
import { holdTable, waitingFor } from './helpers/held-tables.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { openPunishmentsApp, punishmentTools, type PunishmentsApp, type Row } from './helpers/punishments.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { onPostgres } from './helpers/stores.js';

let app: PunishmentsApp;
let t: TestApp;
/** manage_punishments below supervisor rank. */
let senior: Person;
let supervisor: Person;
beforeAll(async () => {
  app = await openPunishmentsApp();
  t = app.t;
  senior = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  supervisor = app.supervisor;
});
afterAll(() => t.close());

const { q, issue, get, patch, revoke, rowsOf } = punishmentTools(() => app);
const { createOk } = reportCrudHelpers(() => t);
const as = (who: Person) => ({ ...who, headers: { ...who.headers, origin: DASHBOARD_ORIGIN } }) as Person;
const shown = async (id: string, who: Person) => (await get(`/punishments/${id}`, who)).json();
const SUPERVISOR_ONLY = { success: false, error: 'Supervisor reports require supervisor rank', code: 'SUPERVISOR_ONLY' };

/** A punishment the caller issued through the route, citing a report the bot created (not flagged). */
async function citing(who: Person): Promise<{ reportId: string; punishment: Row }> {
  const reportId = await createOk();
  const res = await issue({ user_id: chatId(), reason: 'Spamming', notes: 'first notes', report_id: reportId }, as(who));
  expect(res.statusCode).toBe(201);
  return { reportId, punishment: res.json().punishment };
}

describe('a write answers what GET /punishments/<id> shows its caller', () => {
  it.each([['below supervisor rank', () => senior], ['of supervisor rank', () => supervisor]])('issue, change, expire at once, revoke: %s', async (_rank, caller) => {
    const who = as(caller());
    const { punishment } = await citing(who);
    const id = punishment.punishment_id;
    expect(punishment).toEqual((await shown(id, who)).punishment);
    const changed = await patch(id, { reason: 'Appeal lodged', status: 'Appealed', notes: 'second notes' }, who);
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toEqual(await shown(id, who));
    expect(changed.json().punishment).toMatchObject({ status: 'Appealed', notes: 'second notes' });
    // A duration that ends before now expires it in the same answer, as the GET's sweep would.
    await q(`update punishments set created_at = now() - interval '2 days' where punishment_id = $1`, [id]);
    const shortened = await patch(id, { reason: 'One day only', duration: '1d' }, who);
    expect(shortened.json()).toEqual(await shown(id, who));
    expect(shortened.json().punishment).toMatchObject({ status: 'Expired', delivery: { kind: 'expire', status: 'pending' } });

    const other = (await citing(who)).punishment.punishment_id;
    const revoked = await revoke(other, { reason: 'Issued in error' }, who);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json()).toEqual(await shown(other, who));
    expect(revoked.json().punishment).toMatchObject({ status: 'Revoked', delivery: { kind: 'revoke', status: 'pending' } });
  });
});

// PostgreSQL only: PGlite runs one statement at a time, so nothing commits in the middle of a write.
// The answer reads the punished person's stored profile, which no punishment write reads before it
// (the issue's lookup check aside): holding chat_profiles stops the write at its answer.
describe.runIf(onPostgres)('a flag committed before the answer is read (PostgreSQL)', () => {
  /** Starts `write`, commits a flag of the report once it waits for chat_profiles, and returns its answer. */
  async function flaggedDuring(reportId: string, write: () => ReturnType<typeof patch>) {
    const holder = await holdTable(t.urls.production!, 'chat_profiles');
    try {
      const pending = write();
      await waitingFor(t.db.production, 'chat_profiles');
      // The bot's PATCH of the flag would itself wait for chat_profiles (its answer carries profiles).
      await holder.query('update reports set is_supervisor = true where report_id = $1::text', [reportId]);
      await holder.commit();
      return await pending;
    } finally {
      await holder.close();
    }
  }

  it('PATCH below supervisor rank: refused whole, nothing changed or written', async () => {
    const who = as(senior);
    const { reportId, punishment } = await citing(who);
    const before = await rowsOf(punishment.punishment_id);
    const res = await flaggedDuring(reportId, () => patch(punishment.punishment_id, { reason: 'SECRET-REASON', notes: 'SECRET-NOTES' }, who));
    expect([res.statusCode, res.json()]).toEqual([403, SUPERVISOR_ONLY]);
    expect(await rowsOf(punishment.punishment_id)).toEqual(before);
  });

  it('revoke below supervisor rank: refused whole, nothing changed or written', async () => {
    const who = as(senior);
    const { reportId, punishment } = await citing(who);
    const before = await rowsOf(punishment.punishment_id);
    const res = await flaggedDuring(reportId, () => revoke(punishment.punishment_id, { reason: 'SECRET-REASON' }, who));
    expect([res.statusCode, res.json()]).toEqual([403, SUPERVISOR_ONLY]);
    expect(await rowsOf(punishment.punishment_id)).toEqual(before);
  });

  it('issue below supervisor rank: refused whole, no punishment', async () => {
    const who = as(senior);
    const reportId = await createOk();
    const user = chatId();
    const res = await flaggedDuring(reportId, () => issue({ user_id: user, reason: 'SECRET-REASON', report_id: reportId }, who));
    expect([res.statusCode, res.json()]).toEqual([403, SUPERVISOR_ONLY]);
    expect(await q('select punishment_id from punishments where user_id = $1', [user])).toEqual([]);
    expect(await q('select item_id from discipline_deliveries where user_id = $1', [user])).toEqual([]);
  });

  it('PATCH of supervisor rank: made, and answered as the GET shows it', async () => {
    const who = as(supervisor);
    const { reportId, punishment } = await citing(who);
    const res = await flaggedDuring(reportId, () => patch(punishment.punishment_id, { reason: 'Still mine', notes: 'changed' }, who));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(await shown(punishment.punishment_id, who));
    expect(res.json().punishment).toMatchObject({ notes: 'changed', report_id: reportId });
  });
});
