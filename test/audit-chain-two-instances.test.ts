// Two service instances sealing one PostgreSQL database's audit chain while both write: every row
// sealed once, the chain verifies. 5 s of writes in every PostgreSQL suite (direct, through
// PgBouncer, each Node), 30 s in `npm run test:slow` (TEST_RUNS=long).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../src/platform/audit-chain/verify.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import type { Db } from '../src/platform/db/types.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn } from './helpers/identity.js';
import { runs } from './helpers/runs.js';
import { onPostgres } from './helpers/stores.js';

const count = async (db: Db, table: string) => (await db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;

const WRITE_MS = runs(5_000, 30_000);

describe.runIf(onPostgres)(`two instances writing for ${WRITE_MS / 1000} s on PostgreSQL`, () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    const env = { AUDIT_SEAL_INTERVAL_SECONDS: '0.2' };
    a = await createTestApp({ env, sealing: true });
    b = await createTestApp({
      env,
      sealing: true,
      openDb: {
        production: async () => openPostgres({ connectionString: a.urls.production!, max: 5 }),
        demo: async () => openPostgres({ connectionString: a.urls.demo!, max: 5 }),
      },
    });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('reports, queue completions and admin changes from both: every row sealed once, the chain verifies', async () => {
    const db = a.db.production;
    const director = await signedIn(a, { rank: 'Director', clearance: 5, allowlisted: true });
    const targets = await Promise.all([0, 1, 2, 3].map(async () => (await signedIn(a, { rank: 'Agent', clearance: 2 })).agent.chat_id));
    const until = Date.now() + WRITE_MS;
    const tally = { reports: 0, completions: 0, admin: 0 };
    const writer = async (t: TestApp, w: number) => {
      for (let n = 0; Date.now() < until; n++) {
        const id = `TWO-${w}-${n}`;
        const created = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { authorization: PRODUCTION_KEY }, payload: { report_id: id, reporter: chatId(), reported: chatId(), reason: 'Spam', notes: 'n', evidence: 'e' } });
        expect(created.statusCode).toBe(201);
        tally.reports++;
        const { rows } = await db.query<{ action_id: number }>(
          `insert into report_actions (report_id, kind, queue, status, payload, attempts, claimed_at) values ($1::text, 'claim', 'operator', 'processing', '{}', 1, now()) returning action_id`,
          [id],
        );
        const done = await t.app.inject({ method: 'POST', url: `/actions/${rows[0]!.action_id}/complete`, headers: { authorization: PRODUCTION_KEY }, payload: { result: 'success' } });
        expect(done.statusCode, done.body).toBe(200);
        tally.completions++;
        if (n % 4 === 0) {
          const target = targets[(w + n) % targets.length]!;
          const res = await t.app.inject({ method: 'PATCH', url: `/admin/agents/${target}`, headers: director.headers, payload: { fields: { clearance_level: 1 + (n % 3) }, reason: `round ${n}` } });
          expect([200, 409]).toContain(res.statusCode);
          if (res.statusCode === 200) tally.admin++;
        }
      }
    };
    await Promise.all([writer(a, 0), writer(a, 1), writer(b, 2), writer(b, 3)]);
    expect(tally.reports).toBeGreaterThan(WRITE_MS / 600);

    const deadline = Date.now() + 5_000;
    while ((await count(db, 'audit_chain')) < (await count(db, 'events')) + (await count(db, 'audit_log'))) {
      expect(Date.now(), 'every row sealed within 5 s of the last write').toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const v = await verifyChain(db);
    expect(v).toMatchObject({ ok: true, problem: null, pending: 0 });
    expect(v.rows).toBe((await count(db, 'events')) + (await count(db, 'audit_log')));
    const sealedBy = [a, b].map((t) => t.environments.get('production')!.sealing.sealedHere);
    expect(sealedBy[0]! + sealedBy[1]!).toBeGreaterThanOrEqual(tally.reports + tally.completions + tally.admin);
    expect((await db.query(`select count(*)::int as n from events where type = 'queue.action_completed'`)).rows[0]).toEqual({ n: tally.completions });
  }, WRITE_MS + 60_000);
});
