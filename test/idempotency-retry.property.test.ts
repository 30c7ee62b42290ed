// What a retry repeats (issue 41), stated once and checked over random sequences of real
// operations: a state-changing request sent with an Idempotency-Key, then sent again with the same
// key, gets the very same status and body (Idempotent-Replayed: true), and the second send changes
// nothing: every table's row count, the events and the queues are as the first send left them.
// The operations are the bot's and a Senior Agent's, through the routes: creates, notes, evidence,
// timeline entries, action requests, claims and completions, punishments, contact replies, report
// updates; each may refer to anything an earlier one made. The seed is printed (seedOf); a failing
// sequence is shrunk by fast-check and kept below as a regression.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { runs, seedOf } from './helpers/runs.js';
import { storeName } from './helpers/stores.js';

type Row = Record<string, any>;
const bot = { authorization: PRODUCTION_KEY };

/** One operation: which principal, and the request it makes given the reports and actions made so far. */
type Op = { name: string; who: 'bot' | 'agent'; request: (state: State) => { method: 'GET' | 'POST' | 'PATCH'; url: string; payload?: object } | undefined };
interface State {
  reports: string[];
  actions: number[];
}

const pick = <T,>(items: T[], i: number): T | undefined => (items.length === 0 ? undefined : items[i % items.length]);

const operations = (i: number): Op[] => [
  { name: 'create', who: 'bot', request: () => ({ method: 'POST', url: '/reports/create', payload: { report_id: `RP-${process.pid}-${randomUUID().slice(0, 8)}`, reporter: chatId(), reported: chatId(), reason: 'Harassment', notes: 'n', evidence: 'e' } }) },
  { name: 'note', who: 'bot', request: (s) => { const id = pick(s.reports, i); return id === undefined ? undefined : { method: 'POST', url: `/reports/${id}/notes`, payload: { note: `Note ${i}` } }; } },
  { name: 'evidence', who: 'bot', request: (s) => { const id = pick(s.reports, i); return id === undefined ? undefined : { method: 'POST', url: `/reports/${id}/evidence`, payload: { description: `Clip ${i}`, url: `https://clips.example/${i}` } }; } },
  { name: 'timeline', who: 'bot', request: (s) => { const id = pick(s.reports, i); return id === undefined ? undefined : { method: 'POST', url: `/reports/${id}/timeline`, payload: { event: `Checked ${i}` } }; } },
  { name: 'action', who: 'bot', request: (s) => { const id = pick(s.reports, i); return id === undefined ? undefined : { method: 'POST', url: `/reports/${id}/action`, payload: { action: i % 2 === 0 ? 'contact_reporter' : 'claim', reason: `Because ${i}` } }; } },
  { name: 'claim', who: 'bot', request: () => ({ method: 'GET', url: '/actions/next' }) },
  { name: 'complete', who: 'bot', request: (s) => { const id = pick(s.actions, i); return id === undefined ? undefined : { method: 'POST', url: `/actions/${id}/complete`, payload: { result: i % 3 === 0 ? 'failed' : 'success', note: `Done ${i}` } }; } },
  { name: 'update', who: 'bot', request: (s) => { const id = pick(s.reports, i); return id === undefined ? undefined : { method: 'PATCH', url: `/reports/${id}/update`, payload: { notes: `Updated ${i}` } }; } },
  { name: 'contact reply', who: 'bot', request: (s) => { const id = pick(s.reports, i); return id === undefined ? undefined : { method: 'POST', url: `/reports/${id}/contact/reply`, payload: { body: `Hello ${i}` } }; } },
  { name: 'punish', who: 'agent', request: (s) => ({ method: 'POST', url: '/punishments', payload: { user_id: chatId(), reason: `Rule ${i}`, duration: '1d', ...(pick(s.reports, i) ? { report_id: pick(s.reports, i) } : {}) } }) },
];

describe(`a retry with the same Idempotency-Key repeats the answer and changes nothing, on ${storeName}`, () => {
  let t: TestApp;
  let agent: Person;
  beforeAll(async () => {
    t = await createTestApp();
    agent = await signedIn(t, { rank: 'Senior Agent', clearance: 4 });
  });
  afterAll(() => t?.close());

  /** Every table's row count, and the newest event and queue item: what a second send must leave as it is. */
  async function snapshot(): Promise<Row> {
    const { rows: tables } = await t.db.production.query<{ name: string }>(
      `select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'
          and table_name not in ('audit_chain', 'audit_chain_state', 'audit_seal_salts', 'health_state', 'health_incidents', 'sessions', 'read_positions', 'realtime_outbox')
        order by 1`,
    );
    const counts: Row = {};
    for (const { name } of tables) counts[name] = (await t.db.production.query<{ n: number }>(`select count(*)::int as n from ${name}`)).rows[0]!.n;
    const [last] = (await t.db.production.query('select max(id)::text as event, (select max(updated_at)::text from report_actions) as action, (select max(updated_at)::text from reports) as report from events')).rows;
    return { counts, last };
  }

  async function check(sequence: number[]): Promise<void> {
    const state: State = { reports: [], actions: [] };
    for (const [step, choice] of sequence.entries()) {
      const op = operations(step)[choice % operations(step).length]!;
      const request = op.request(state);
      if (request === undefined) continue;
      const headers = { ...(op.who === 'bot' ? bot : agent.headers), 'idempotency-key': randomUUID() };
      const send = () => t.app.inject({ method: request.method, url: request.url, headers, ...(request.payload ? { payload: request.payload } : {}) });
      const start = await snapshot();
      const first = await send();
      expect(first.statusCode, `${op.name}: ${first.body}`).toBeLessThan(500);
      const before = await snapshot();
      const changed = JSON.stringify(before) !== JSON.stringify(start);
      const again = await send();
      // A request that changed something: its answer replayed. One that changed nothing (a
      // refusal, an empty queue) is asked again, and answers the same.
      expect({ op: op.name, status: again.statusCode, replayed: again.headers['idempotent-replayed'] }).toEqual({ op: op.name, status: first.statusCode, replayed: changed ? 'true' : undefined });
      if (changed) expect(again.body).toBe(first.body);
      expect({ op: op.name, ...(await snapshot()) }).toEqual({ op: op.name, ...before });
      const body = first.statusCode < 300 && first.body ? JSON.parse(first.body) : undefined;
      if (op.name === 'create' && first.statusCode === 201) state.reports.push(body.report.report_id);
      if (op.name === 'action' && first.statusCode < 300) {
        const { rows } = await t.db.production.query<{ id: number }>('select max(action_id)::int as id from report_actions where report_id = $1', [(request.url.split('/')[2])]);
        if (rows[0]?.id) state.actions.push(rows[0].id);
      }
      if (op.name === 'claim' && first.statusCode === 200) state.actions.push(body.action.action_id);
    }
  }

  it('over random sequences of the bot\'s and an agent\'s operations', async () => {
    const seed = seedOf('RETRY_PROPERTY_SEED', 411);
    await fc.assert(fc.asyncProperty(fc.array(fc.nat(), { minLength: 3, maxLength: 12 }), check), { seed, numRuns: runs(6, 60) });
  }, 300_000);
});
