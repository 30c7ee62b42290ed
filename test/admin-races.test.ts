// Admins racing each other (PostgreSQL only: PGlite runs one statement at a time). The guards are
// evaluated again inside the transaction on the locked caller and target rows, so a change that
// was allowed when the request arrived cannot commit after its caller lost the right to make it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/platform/db/postgres.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { admin } from './helpers/admin.js';
import { signedIn, type Person } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

describe.runIf(onPostgres)('admin races (PostgreSQL)', () => {
  let t: TestApp;
  let other: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    // A second instance on the same database.
    other = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: t.urls.production! }) } });
  });
  afterAll(async () => {
    await other.close();
    await t.close();
  });

  const activeDirectors = async () =>
    (
      await t.db.production.query<{ chat_id: string }>(
        `select a.chat_id from agents a join admin_allowlist l on l.chat_id = a.chat_id
         where l.active and a.status = 'active' and a.agent_rank = 'Director' order by a.chat_id`,
      )
    ).rows.map((r) => r.chat_id);
  const demote = (app: TestApp, by: Person, target: Person) =>
    app.app.inject({ method: 'PATCH', url: `/admin/agents/${target.agent.chat_id}`, headers: by.headers, payload: { fields: { agent_rank: 'Head Investigator' }, reason: 'Restructure' } });

  it('two Directors revoking each other at once: both are refused, both stay', async () => {
    await t.db.production.query('delete from admin_allowlist');
    const [a, b] = [await admin(t), await admin(t)];
    const revoke = (app: TestApp, by: Person, target: Person) =>
      app.app.inject({ method: 'POST', url: '/admin/access/revoke', headers: by.headers, payload: { chat_id: target.agent.chat_id, reason: 'Coup' } });
    const answers = await Promise.all([revoke(t, a, b), revoke(other, b, a)]);
    expect(answers.map((r) => [r.statusCode, r.json().code])).toEqual([[403, 'DIRECTOR_PROTECTED'], [403, 'DIRECTOR_PROTECTED']]);
    expect(await activeDirectors()).toEqual([a.agent.chat_id, b.agent.chat_id].sort());
  });

  it('two Directors demoting each other at once on two instances: exactly one succeeds, a Director remains', async () => {
    for (let round = 0; round < 10; round++) {
      await t.db.production.query('delete from admin_allowlist');
      const [a, b] = [await admin(t), await admin(t)];
      const answers = await Promise.all([demote(t, a, b), demote(other, b, a)]);
      const statuses = answers.map((r) => r.statusCode).sort();
      expect(statuses, `round ${round}`).toEqual([200, 403]);
      const refused = answers.find((r) => r.statusCode === 403)!;
      // The loser was demoted while it waited: the re-check on the locked rows sees a Head
      // Investigator acting on a Director.
      expect(refused.json()).toEqual({ success: false, error: 'You cannot modify an agent ranked above yourself', code: 'RANK_HIERARCHY' });
      const survivors = await activeDirectors();
      expect(survivors).toHaveLength(1);
      // The one audit row written belongs to the survivor.
      const audit = await t.db.production.query<{ actor_chat_id: string }>(
        "select actor_chat_id from audit_log where action = 'admin.agent_updated' and target = any($1::text[]) ",
        [[a.agent.chat_id, b.agent.chat_id]],
      );
      expect(audit.rows.map((r) => r.actor_chat_id)).toEqual(survivors);
    }
  });

  it('a grant on one instance is honoured by the other on the next request, and so is a revoke', async () => {
    const director = await admin(t);
    const colleague = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    const onOther = () => other.app.inject({ method: 'GET', url: '/admin/queue', headers: colleague.headers });
    expect((await onOther()).statusCode).toBe(403);
    const grant = await t.app.inject({ method: 'POST', url: '/admin/access/grant', headers: director.headers, payload: { chat_id: colleague.agent.chat_id, reason: 'Joins' } });
    expect(grant.statusCode).toBe(200);
    expect((await onOther()).statusCode).toBe(200);
    await t.app.inject({ method: 'POST', url: '/admin/access/revoke', headers: director.headers, payload: { chat_id: colleague.agent.chat_id, reason: 'Leaves' } });
    expect((await onOther()).json()).toEqual({ success: false, error: 'Not an admin user', code: 'NOT_ADMIN' });
  });

  it('an admin revoked while a change waits on its lock is refused when the lock is granted', async () => {
    const director = await admin(t);
    const head = await admin(t, { rank: 'Head Investigator', clearance: 4 });
    const target = await signedIn(t, { rank: 'Agent', clearance: 2 });
    const db = t.db.production;
    // Hold the target's row, start the Head Investigator's change (it passes the guard and waits),
    // revoke the Head Investigator in another transaction, then release the target.
    const release = await new Promise<() => void>((resolveHeld) => {
      void db.transaction(async (tx) => {
        await tx.query('select 1 from agents where chat_id = $1::text for update', [target.agent.chat_id]);
        await new Promise<void>((done) => resolveHeld(done));
      });
    });
    const pending = other.app.inject({ method: 'PATCH', url: `/admin/agents/${target.agent.chat_id}`, headers: head.headers, payload: { fields: { name: 'Changed' }, reason: 'r' } });
    await waitForLockWait(t);
    await db.query('update admin_allowlist set active = false where chat_id = $1::text', [head.agent.chat_id]);
    release();
    const res = await pending;
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('NOT_ADMIN');
    expect((await db.query('select name from agents where chat_id = $1::text', [target.agent.chat_id])).rows[0]).toEqual({ name: target.agent.name });
    expect(director.agent.agent_rank).toBe('Director');
  });
});

/** Resolves once some backend of this database waits for a row lock. */
async function waitForLockWait(t: TestApp): Promise<void> {
  for (;;) {
    const { rows } = await t.db.production.query<{ waiting: boolean }>(
      "select exists (select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock') as waiting",
    );
    if (rows[0]!.waiting) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
