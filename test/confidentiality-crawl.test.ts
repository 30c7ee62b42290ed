// The canary crawl of issue 28 (spec Authentication 6: "A supervisor may see supervisor-flagged
// reports; others may not"; Audit log: "Callers who are not supervisors never see supervisor
// events, whatever the parameters"). A unique string sits in every text two supervisor-flagged
// reports carry (one flagged at creation, one flagged after everything was written), and every
// GET operation of /openapi.json is called with the parameters that could surface it, as every
// principal. Below supervisor rank no answer, body or header, 2xx or not, may hold one; the
// Director and the bot's key must find each in every place it belongs, so the test cannot pass
// by finding nothing. Operations come from the document: a new route is crawled without anyone
// adding it here, and one that cannot be crawled must be named in EXCLUDED with the reason.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DEMO_KEY, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { canariesIn, canariesOf, plantCanaries, type Canary, type CanaryKind, type PlantedReport } from './helpers/canaries.js';
import { signedIn, type Person } from './helpers/identity.js';
import { inBatches, operationsOf, urlsOf, type Operation, type Pools } from './helpers/openapi-crawl.js';
import { createSession, importDemoScenarios, newTrainee, newTrainer } from './helpers/training.js';

/** GET operations not crawled at all, each with why. None today: every one can be called safely. */
const EXCLUDED: ReadonlyMap<string, string> = new Map([]);

/**
 * GET operations that hand out work (the bot's pickups, declared `changes`). Callers without the
 * key are refused there and crawl them with the rest; the key crawls them last, in their own test,
 * so that the lists crawled before still hold the pending items. Found by their summary too
 * ("Claim …"), so a new pickup cannot slip into the main crawl unnoticed.
 */
const PICKUPS = ['GET /actions/next/operator', 'GET /actions/next/supervisor', 'GET /actions/next', 'GET /discipline/next'];

/** GET routes the document hides (schema.hide): crawled as well, they answer every caller. */
const HIDDEN = ['/', '/ready', '/openapi.json', '/docs', '/docs/json', '/realtime/v1/websocket'];

const REPORT = 'GET /reports/{report_id}';
const LIST = 'GET /reports';
const CONTACT = 'GET /reports/{report_id}/contact';
const AUDIT = 'GET /audit';
const ADMIN_AUDIT = 'GET /admin/audit';
const ADMIN_REPORTS = 'GET /admin/reports';
const SUPERVISOR_QUEUE = 'GET /actions/pending/supervisor';
const OPERATOR_QUEUE = 'GET /actions/pending/operator';
const BOT_QUEUE = 'GET /actions/pending';
const ADMIN_QUEUE = 'GET /admin/queue';
const EVIDENCE = 'GET /evidence';
const PUNISHMENTS = 'GET /punishments';
const PUNISHMENT = 'GET /punishments/{punishment_id}';
const DELIVERIES = 'GET /discipline/pending';
const PROFILE = 'GET /punishments/users/{chat_id}/profile';

const QUEUES = [SUPERVISOR_QUEUE, BOT_QUEUE, ADMIN_QUEUE];
/**
 * A failed item: issue 28 moves a report's pending and processing items when its flag changes,
 * and says nothing of finished ones, so the later-flagged report's failed item may be in either list.
 */
const EITHER_QUEUE = [SUPERVISOR_QUEUE, OPERATOR_QUEUE];
const PUNISHMENT_PLACES = [PUNISHMENTS, PUNISHMENT, AUDIT, ADMIN_AUDIT, DELIVERIES];

/**
 * Where a supervisor must find each canary of both reports (the later-flagged one's pending queue
 * items having moved to the supervisor queue); a list inside the list is "in at least one of
 * these". Each principal is held to the operations its credential may call: the bot's key to
 * those the document marks apiKey.
 */
const PLACES: Record<CanaryKind, (string | string[])[]> = {
  reason: [REPORT, LIST, AUDIT, ADMIN_REPORTS, ...QUEUES],
  notes: [REPORT, LIST, AUDIT],
  evidence: [REPORT, LIST, AUDIT],
  evidence_url: [REPORT, LIST, AUDIT, EVIDENCE],
  reporter_name: [REPORT, LIST, AUDIT, ADMIN_REPORTS, ...QUEUES],
  // Replaced by the correction: only the creation event and the correction's before keep it.
  reported_name: [AUDIT, ADMIN_AUDIT],
  thread_id: [REPORT, LIST, AUDIT, ...QUEUES],
  // The investigate action's reason: its timeline line, its event, the failed item's payload.
  action_reason: [REPORT, AUDIT, EITHER_QUEUE, ADMIN_QUEUE],
  failure_note: [AUDIT, EITHER_QUEUE, ADMIN_QUEUE],
  contact_opening: [CONTACT, AUDIT, ...QUEUES],
  contact_reply: [CONTACT, ...QUEUES],
  contact_response: [CONTACT],
  contact_sender: [CONTACT],
  note: [REPORT],
  evidence_description: [REPORT, EVIDENCE],
  evidence_row_url: [REPORT, EVIDENCE],
  timeline: [REPORT],
  reporter_username: [REPORT, PROFILE],
  reporter_global_name: [REPORT, PROFILE],
  // The punished party: its profile rides on the punishment too.
  reported_username: [REPORT, PROFILE, PUNISHMENTS, PUNISHMENT],
  reported_global_name: [REPORT, PROFILE, PUNISHMENTS, PUNISHMENT],
  corrected_name: [REPORT, LIST, AUDIT, ADMIN_AUDIT, ADMIN_REPORTS, EVIDENCE, ...QUEUES],
  correction_reason: [REPORT, AUDIT, ADMIN_AUDIT],
  punishment_reason: PUNISHMENT_PLACES,
  punishment_detail: PUNISHMENT_PLACES,
  punishment_notes: PUNISHMENT_PLACES,
  punishment_evidence: PUNISHMENT_PLACES,
  punishment_username: PUNISHMENT_PLACES,
  delivery_note: [DELIVERIES, PUNISHMENTS, PUNISHMENT, AUDIT],
};

interface Principal {
  name: string;
  headers: Record<string, string>;
  /** The credential it presents, as the document's security names them (none: public routes only). */
  credential: 'apiKey' | 'session' | 'none';
}

interface Answer {
  op: Operation | undefined;
  url: string;
  res: LightMyRequestResponse;
  found: Canary[];
}

const session = (p: Person) => ({ headers: p.headers, credential: 'session' as const });

/** Every principal below supervisor rank, and the other environment's credentials (issue 28). */
const BELOW_SUPERVISOR: { name: string; make: (t: TestApp) => Promise<Omit<Principal, 'name'>> }[] = [
  { name: 'an Agent (clearance 2)', make: async (t) => session(await signedIn(t, { rank: 'Agent', clearance: 2 })) },
  { name: 'a Senior Agent (clearance 4, allowlisted)', make: async (t) => session(await signedIn(t, { rank: 'Senior Agent', clearance: 4, allowlisted: true })) },
  { name: 'a trainer (Agent, is_trainer)', make: async () => session(trainer) },
  { name: 'a trainee (onboarding)', make: async () => session(trainee) },
  { name: 'the demo key on the production host', make: async () => ({ headers: { authorization: DEMO_KEY, host: 'localhost' }, credential: 'apiKey' }) },
  // A demo Director's live session: were it taken in production, it would see everything.
  {
    name: 'a demo session on the production host',
    make: async (t) => ({ headers: { cookie: (await signedIn(t, { env: 'demo', rank: 'Director', clearance: 5, allowlisted: true })).cookie, host: 'localhost' }, credential: 'session' }),
  },
  { name: 'no credential', make: async () => ({ headers: { host: 'localhost' }, credential: 'none' }) },
];

let t: TestApp;
let reports: PlantedReport[];
let canaries: Canary[];
let operations: Operation[];
let pools: Pools;
let director: Principal;
let bot: Principal;
let trainer: Person;
let trainee: Person;
const belowSupervisor = new Map<string, Principal>();

beforeAll(async () => {
  t = await createTestApp();
  const directorPerson = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true, name: 'Dana Director' });
  director = { name: 'the Director', ...session(directorPerson) };
  bot = { name: "the bot's key", headers: { authorization: PRODUCTION_KEY, host: 'localhost' }, credential: 'apiKey' };
  trainer = await newTrainer(t);
  trainee = await newTrainee(t);
  for (const { name, make } of BELOW_SUPERVISOR) belowSupervisor.set(name, { name, ...(await make(t)) });
  const scenarios = await importDemoScenarios(t.db.production);
  const sessionId = await createSession(t, trainer, trainee, scenarios['first-response']);

  reports = await plantCanaries(t, directorPerson);
  canaries = canariesOf(reports);
  operations = await operationsOf(t, 'get');

  const q = async (sql: string) => (await t.db.production.query<{ v: string }>(sql)).rows.map((r) => String(r.v));
  const reportIds = reports.map((r) => r.reportId);
  const parties = reports.flatMap((r) => [r.reporter, r.reported]);
  const punishmentIds = reports.map((r) => r.punishmentId);
  const actionIds = reports.flatMap((r) => r.actionIds.map(String));
  const itemIds = reports.flatMap((r) => r.itemIds.map(String));
  // Values that exist, by parameter name (path and query). A path parameter without a pool fails the crawl.
  pools = {
    report_id: reportIds,
    punishment_id: punishmentIds,
    chat_id: [...parties, directorPerson.agent.chat_id],
    user_id: parties,
    agent: [directorPerson.agent.chat_id],
    target: [...reportIds, ...punishmentIds, ...parties, ...actionIds, ...itemIds],
    action: await q('select distinct action as v from audit_log order by 1'),
    event: await q('select distinct type as v from events order by 1'),
    action_id: actionIds,
    item_id: itemIds,
    session_id: [String(sessionId)],
    // No game server in tests: any valid id answers alike.
    game_user_id: ['5'],
    // Each canary, their common prefix (all of them at once, in either case), the report ids.
    search: [...canaries.map((c) => c.text), 'CANARY', 'canary', ...reportIds],
    // Free-text parameters no pool names (a new filter, the sign-in's own): the prefix and the ids.
    text: ['CANARY', ...reportIds],
  };
}, 120_000);
afterAll(() => t?.close());

const isPickup = (op: Operation) => PICKUPS.includes(op.label);
const crawled = () => operations.filter((op) => !EXCLUDED.has(op.label));

/** Every request of the crawl: each operation's URLs, then the hidden routes. */
function plan(ops: Operation[]): { op: Operation | undefined; url: string }[] {
  return [...ops.flatMap((op) => urlsOf(op, pools).map((url) => ({ op, url }))), ...HIDDEN.map((url) => ({ op: undefined, url }))];
}

async function crawl(who: Principal, ops: Operation[]): Promise<Answer[]> {
  return inBatches(plan(ops), 8, async ({ op, url }) => {
    const res = await t.app.inject({ method: 'GET', url, headers: who.headers });
    return { op, url, res, found: canariesIn(canaries, url, res) };
  });
}

const line = (a: Answer) => `${a.url} → ${a.res.statusCode}`;

/** Leaks by operation, `GET /audit (12 requests, e.g. /audit?search=… → 200): B.reason, …`, in crawl order. */
function leaksByOperation(answers: Answer[]): string[] {
  const byLabel = new Map<string, Answer[]>();
  for (const a of answers.filter((x) => x.found.length > 0)) {
    const label = a.op?.label ?? `GET ${a.url}`;
    byLabel.set(label, [...(byLabel.get(label) ?? []), a]);
  }
  return [...byLabel].map(([label, leaky]) => {
    const kinds = new Set(leaky.flatMap((a) => a.found.map((c) => `${c.report}.${c.kind}`)));
    return `${label} (${leaky.length} requests, e.g. ${line(leaky[0]!)}): ${[...kinds].sort().join(', ')}`;
  });
}
/** Server errors other than 503 (an integration not configured in tests) mean the crawl went wrong. */
const serverErrors = (answers: Answer[]) => answers.filter((a) => a.res.statusCode >= 500 && a.res.statusCode !== 503).map((a) => `${line(a)} ${a.res.body.slice(0, 200)}`);

describe('the confidentiality canary crawl', () => {
  it('plants a canary in every text of both reports, the later one flagged after everything was written', async () => {
    expect(canaries).toHaveLength(2 * Object.keys(PLACES).length);
    expect(new Set(canaries.map((c) => c.text)).size).toBe(canaries.length);
    const { rows } = await t.db.production.query<{ report_id: string; is_supervisor: boolean }>(
      'select report_id, is_supervisor from reports where report_id = any($1::text[]) order by report_id',
      [reports.map((r) => r.reportId)],
    );
    expect(rows).toEqual(reports.map((r) => ({ report_id: r.reportId, is_supervisor: true })));
    // Queue items left pending for the lists (contact_reporter, contact_message), besides the failed investigate.
    const pending = await t.db.production.query<{ n: number }>(`select count(*)::int as n from report_actions where status = 'pending'`);
    expect(pending.rows[0]!.n).toBe(4);
  });

  it('covers every GET operation of the OpenAPI document, or names why not', () => {
    const labels = operations.map((op) => op.label);
    for (const label of [...EXCLUDED.keys(), ...PICKUPS, ...new Set(Object.values(PLACES).flat(2))]) expect(labels).toContain(label);
    // A pickup the document describes as one must be crawled last, by the key, not in the main crawl.
    expect(operations.filter((op) => /^claim\b/i.test(op.summary)).map((op) => op.label).sort()).toEqual([...PICKUPS].sort());
    // Every path parameter has values (urlsOf throws otherwise) and every operation yields requests.
    for (const op of crawled()) expect(urlsOf(op, pools).length, op.label).toBeGreaterThan(0);
    expect(crawled().length + EXCLUDED.size).toBe(operations.length);
  });

  // Pickups are refused to every one of these (they take only the production key), so they are
  // crawled here with the rest: nothing is claimed, and were something claimed, it would show.
  for (const { name } of BELOW_SUPERVISOR) {
    it(`as ${name}: no canary in any answer, body or header`, async () => {
      const who = belowSupervisor.get(name)!;
      const answers = await crawl(who, crawled());
      expect(leaksByOperation(answers)).toEqual([]);
      expect(serverErrors(answers)).toEqual([]);
      // Not vacuous: a signed-in agent of this environment is answered (the report list is theirs to read).
      if (who.credential === 'session' && !name.startsWith('a demo')) {
        expect(answers.find((a) => a.url === '/reports')?.res.statusCode).toBe(200);
      }
    }, 120_000);
  }

  for (const which of ['Director', 'bot'] as const) {
    it(`as the ${which === 'Director' ? 'Director (supervisor rank)' : "bot's key"}: every canary is found in every place it belongs`, async () => {
      const who = which === 'Director' ? director : bot;
      const answers = await crawl(who, crawled().filter((op) => !(who.credential === 'apiKey' && isPickup(op))));
      expect(serverErrors(answers)).toEqual([]);
      const seen = new Map<string, Set<string>>();
      for (const a of answers) {
        if (!a.op || a.res.statusCode >= 300) continue;
        const set = seen.get(a.op.label) ?? new Set<string>();
        for (const c of a.found) set.add(c.text);
        seen.set(a.op.label, set);
      }
      const reachable = new Set(operations.filter((op) => op.credentials.includes(who.credential)).map((op) => op.label));
      const missing = canaries.flatMap((c) =>
        PLACES[c.kind]
          .map((place) => (Array.isArray(place) ? place : [place]).filter((label) => reachable.has(label)))
          .filter((labels) => labels.length > 0 && !labels.some((label) => seen.get(label)?.has(c.text)))
          .map((labels) => `${c.report}.${c.kind} not in ${labels.join(' or ')}`),
      );
      expect(missing).toEqual([]);
    }, 120_000);
  }

  it("the key's pickups, crawled last: the operator pickup never hands out a flagged report's action", async () => {
    const drained = new Map<string, Answer[]>();
    // In this order: the operator queue first, before the any-queue pickup could empty it.
    for (const op of PICKUPS.map((label) => operations.find((o) => o.label === label)!)) {
      const answers: Answer[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await t.app.inject({ method: 'GET', url: op.path, headers: bot.headers });
        answers.push({ op, url: op.path, res, found: canariesIn(canaries, op.path, res) });
        if (res.statusCode !== 200) break;
      }
      drained.set(op.label, answers);
      expect(answers.map((a) => a.res.statusCode).at(-1), op.label).toBe(204);
    }
    // Both reports are supervisor-flagged now: their pending actions are the supervisor queue's.
    const operator = drained.get('GET /actions/next/operator')!;
    const handedOut = operator.filter((a) => a.res.statusCode === 200).map((a) => `${a.res.json().action.report_id} ${a.res.json().action.kind}: ${a.found.map((c) => `${c.report}.${c.kind}`).join(', ')}`);
    expect(handedOut).toEqual([]);
  });
});
