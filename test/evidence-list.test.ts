// GET /evidence (spec: Evidence list): newest first, a light report summary and the submitter's
// name per row, from a constant number of statements; supervisor reports' evidence hidden below
// supervisor rank.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/platform/db/types.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { signedIn, type Person } from './helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
let submitter: Person;
beforeAll(async () => {
  t = await createTestApp();
  submitter = await signedIn(t, { name: 'Sam Submitter', clearance: 1 });
});
afterAll(() => t.close());

const q = async (sql: string, values: unknown[] = []) => (await t.db.production.query(sql, values)).rows as Record<string, any>[];

/** Ten reports (every third supervisor-flagged), five evidence rows each, one second apart. */
async function seed(from: number, reports: number) {
  for (let r = from; r < from + reports; r++) {
    const id = `SVC-CASE-${String(r).padStart(5, '0')}`;
    await q(`insert into reports (report_id, reporter, reported, reported_name, reason, notes, evidence, status, is_supervisor)
             values ($1, 'rep', $2, $3, 'x', '', '', 'Pending', $4)`, [id, `reported-${r}`, r % 2 ? `Name ${r}` : null, r % 3 === 0]);
    for (let e = 0; e < 5; e++) {
      await q(
        `insert into report_evidence (report_id, description, url, submitted_by, created_at)
         values ($1, $2, $3, $4, timestamptz '2026-01-01T00:00:00Z' + make_interval(secs => $5))`,
        [id, `Evidence ${r}.${e}`, `https://example.test/${r}/${e}`, e === 4 ? null : submitter.agent.chat_id, r * 10 + e],
      );
    }
  }
}

/** Counts the statements the app sends while `fn` runs. */
async function countingQueries(fn: () => Promise<unknown>): Promise<number> {
  const db = t.environments.get('production')!.db as Db & { query: Db['query'] };
  const original = db.query;
  let count = 0;
  db.query = ((text: string, values?: readonly unknown[]) => {
    count++;
    return original.call(db, text, values);
  }) as Db['query'];
  try {
    await fn();
  } finally {
    db.query = original;
  }
  return count;
}

describe('GET /evidence', () => {
  it('every row newest first with its report summary and submitter name; batched', async () => {
    await seed(1, 1);
    const small = await countingQueries(() => t.app.inject({ url: '/evidence', headers: key }));
    await seed(2, 9);
    let res: Awaited<ReturnType<typeof t.app.inject>> | undefined;
    const large = await countingQueries(async () => (res = await t.app.inject({ url: '/evidence', headers: key })));
    expect(large).toBe(small);
    expect(large).toBe(1);
    expect(res!.statusCode).toBe(200);
    const evidence = res!.json().evidence as Record<string, any>[];
    expect(evidence).toHaveLength(50);
    expect(evidence.map((e) => e.created_at)).toEqual(evidence.map((e) => e.created_at).sort().reverse());
    expect(evidence[0]).toEqual({
      id: expect.any(Number),
      report_id: 'SVC-CASE-00010',
      description: 'Evidence 10.4',
      url: 'https://example.test/10/4',
      submitted_by: null,
      submitted_by_id: null,
      submitted_by_name: null,
      created_at: '2026-01-01T00:01:44.000Z',
      report: { report_id: 'SVC-CASE-00010', status: 'Pending', reported: 'reported-10', reported_name: null, is_supervisor: false },
    });
    expect(evidence[1]).toMatchObject({
      description: 'Evidence 10.3',
      submitted_by: submitter.agent.chat_id,
      submitted_by_id: submitter.agent.chat_id,
      submitted_by_name: 'Sam Submitter',
    });
    expect(evidence.find((e) => e.report_id === 'SVC-CASE-00009')!.report).toEqual({
      report_id: 'SVC-CASE-00009', status: 'Pending', reported: 'reported-9', reported_name: 'Name 9', is_supervisor: true,
    });
  });

  it('supervisor-flagged reports’ evidence is omitted below supervisor rank', async () => {
    const flagged = new Set((await q('select report_id from reports where is_supervisor')).map((r) => r.report_id));
    const supervisorRows = (await q('select count(*)::int as n from report_evidence e join reports r using (report_id) where r.is_supervisor'))[0]!.n;
    expect(supervisorRows).toBeGreaterThan(0);
    const all = (await q('select count(*)::int as n from report_evidence'))[0]!.n;

    const agent = (await t.app.inject({ url: '/evidence', headers: submitter.headers })).json().evidence as Record<string, any>[];
    expect(agent).toHaveLength(all - supervisorRows);
    expect(agent.some((e) => flagged.has(e.report_id))).toBe(false);

    const supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 1 });
    expect((await t.app.inject({ url: '/evidence', headers: supervisor.headers })).json().evidence).toHaveLength(all);
  });

  it('401 without credentials, 403 without clearance', async () => {
    expect((await t.app.inject({ url: '/evidence' })).statusCode).toBe(401);
    const none = await signedIn(t, { clearance: null });
    const res = await t.app.inject({ url: '/evidence', headers: none.headers });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'INSUFFICIENT_CLEARANCE' });
  });
});
