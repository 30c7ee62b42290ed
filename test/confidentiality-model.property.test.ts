// Issue 38: confidentiality proven by a model of the whole service, not a list of doors. Random
// sequences of every operation that can touch a report or a person (confidentiality-commands.ts),
// each by a random principal, through app.inject. The invariant, after every command: no answer
// anyone below supervisor rank received in that step, and no answer of a crawl of every GET
// operation of /openapi.json as each of them (ids, filters and sorts from the model and the store),
// holds a canary or a party chat id of a report flagged at that moment. And so that it cannot pass
// by finding nothing: every run ends with a supervisor finding each live flagged report's texts
// in its detail. The seed is printed (CONFIDENTIALITY_MODEL_SEED replays it); a failure is shrunk,
// and kept below as a regression sequence (fast-check's `path`).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { COMMANDS, seedLives } from './helpers/confidentiality-commands.js';
import { BELOW_SUPERVISOR, leaksIn, World } from './helpers/confidentiality-model.js';
import { inBatches, operationsOf, urlsOf, type Operation, type Pools } from './helpers/openapi-crawl.js';
import { runs, seedOf } from './helpers/runs.js';
import { storeName } from './helpers/stores.js';
import { createSession, importDemoScenarios } from './helpers/training.js';

let t: TestApp;
let world: World;
let operations: Operation[];
/** Flagged lives the crawls looked for, summed over the checks: the test is not vacuous. */
let flaggedChecked = 0;

beforeAll(async () => {
  t = await createTestApp();
  const scenarios = await importDemoScenarios(t.db.production);
  world = await World.open(t, (trainer, trainee) => createSession(t, trainer, trainee, scenarios['first-response']));
  // Pickups hand out work: the commands claim, a crawl must not (a session is refused there anyway).
  operations = (await operationsOf(t, 'get')).filter((op) => !op.summary.match(/^claim\b/i));
}, 120_000);
afterAll(() => t?.close());

/**
 * Values for the crawl's parameters: report ids and parties from the model, other ids from the
 * store. The run's own lives (`light`, the crawl after every step: its flagged ones and the latest
 * few), and the latest flagged lives of the runs before; the lists, which show every row, are
 * crawled whole either way, so a run's cost does not grow with the runs before it.
 */
async function pools(w: World, light: boolean): Promise<Pools> {
  const own = w.runLives();
  const earlier = w.lives.slice(0, w.lives.length - own.length).filter((l) => l.flagged).slice(-4);
  const lives = [...new Set([...earlier, ...(light ? [...own.filter((l) => l.flagged), ...own.slice(-3)] : own)])];
  const flaggedIds = [...new Set(w.lives.filter((l) => l.flagged).map((l) => l.id))];
  const parties = lives.flatMap((l) => [l.reporter, l.reported]);
  const latest = light ? 3 : 12;
  const pools: Pools = {
    report_id: [...new Set(lives.map((l) => l.id))],
    punishment_id: await w.ids(`select punishment_id as v from punishments order by created_at desc limit ${latest}`),
    chat_id: [...parties, w.chatIdOf('agent')],
    user_id: parties,
    action_id: await w.ids(`select action_id as v from report_actions order by action_id desc limit ${latest}`),
    item_id: await w.ids(`select item_id as v from discipline_deliveries order by item_id desc limit ${latest}`),
    session_id: [w.sessionId],
    game_user_id: ['5'],
    agent: [w.chatIdOf('director')],
    target: flaggedIds,
    search: ['CANARY', ...flaggedIds],
    text: ['CANARY', ...flaggedIds],
  };
  // A path parameter needs a value before anything exists: one that names nothing (a 404 to crawl).
  return Object.fromEntries(Object.entries(pools).map(([name, values]) => [name, values.length > 0 ? values : ['1']]));
}

/** The step's own answers to those below supervisor rank, then their crawls: every leak, described. */
async function leaks(w: World, light: boolean): Promise<string[]> {
  const found: string[] = [];
  for (const sent of w.step) {
    if (BELOW_SUPERVISOR.includes(sent.who)) for (const leak of leaksIn(w, sent.who, sent)) found.push(`${sent.who} ${sent.method} ${sent.url} → ${sent.res.statusCode}: ${leak}`);
  }
  w.step = [];
  const values = await pools(w, light);
  const urls = operations.flatMap((op) => urlsOf(op, values, light));
  flaggedChecked += w.lives.filter((l) => l.flagged).length;
  for (const who of BELOW_SUPERVISOR) {
    await inBatches(urls, 8, async (url) => {
      const res = await t.app.inject({ method: 'GET', url, headers: w.headers(who) });
      if (res.statusCode >= 500 && res.statusCode !== 503) found.push(`${who} GET ${url} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      for (const leak of leaksIn(w, who, { url, res })) found.push(`${who} GET ${url} → ${res.statusCode}: ${leak}`);
    });
  }
  return found;
}

/** Not vacuous: a supervisor finds every text the model says a live, unerased flagged report shows. */
async function missingForSupervisor(w: World): Promise<string[]> {
  const missing: string[] = [];
  for (const life of w.lives.filter((l) => l.live && l.flagged && !l.erased)) {
    const res = await t.app.inject({ url: `/reports/${life.id}`, headers: w.headers('supervisor') });
    if (res.statusCode !== 200) missing.push(`${life.id}: ${res.statusCode}`);
    for (const text of life.shown) if (!res.body.includes(text)) missing.push(`${life.id}: ${text}`);
    if (!res.body.includes(life.reporter) && !res.body.includes(life.reported)) missing.push(`${life.id}: its parties`);
  }
  return missing;
}

/** One command, then the invariant. */
function checked(command: fc.AsyncCommand<World, World>): fc.AsyncCommand<World, World> {
  return {
    check: (m) => remaining > 0 && command.check(m),
    run: async (m, w) => {
      remaining--;
      await command.run(m, w);
      expect(await leaks(w, true), `after ${command.toString()}`).toEqual([]);
    },
    toString: () => command.toString(),
  };
}

/** CONFIDENTIALITY_MODEL_RUNS: the number of runs of a campaign outside CI (docs/testing.md). */
const CAMPAIGN = Number(process.env.CONFIDENTIALITY_MODEL_RUNS ?? '') || 0;

/** Commands a run still executes: a regression replays its sequence up to the failing step only. */
let remaining = Infinity;

const sequences = (size: number) => fc.commands(COMMANDS.map((arb) => arb.map(checked)), { size: '+1', maxCommands: size });

async function runModel(numRuns: number, commands: number, seed: number, replay?: { path: string; steps: number }) {
  const started = Date.now();
  let passed = 0;
  await fc.assert(
    fc.asyncProperty(sequences(commands), async (cmds) => {
      remaining = replay?.steps ?? Infinity;
      world.beginRun();
      await seedLives(world);
      await fc.asyncModelRun(() => ({ model: world, real: world }), cmds);
      // The run's end: the whole crawl, every filter value and id, and the supervisor's.
      expect(await leaks(world, false), `after ${cmds.toString()}`).toEqual([]);
      expect(await missingForSupervisor(world)).toEqual([]);
      // A campaign says how far it got (a run that fails is reported by fast-check).
      if (CAMPAIGN > 0 && ++passed % 10 === 0) console.log(`${passed} runs passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }),
    { numRuns, seed, ...(replay ? { path: replay.path } : {}), endOnFailure: process.env.CONFIDENTIALITY_MODEL_NO_SHRINK === '1' },
  );
  console.log(`confidentiality model on ${storeName}: ${numRuns} runs of up to ${commands} commands in ${((Date.now() - started) / 1000).toFixed(1)} s, ${world.lives.length} report lives`);
  expect(flaggedChecked).toBeGreaterThan(0);
}

/**
 * Sequences the model found, kept: each replays one run (its seed, fast-check's path to it, the
 * sequence length it was drawn with) up to its failing step. Every run picks among its own
 * reports, so a replay does not depend on the runs before it.
 */
// Its second finding (events about a punishment whose flagged report was deleted named no report)
// was drawn before runs picked among their own reports, so its seed no longer replays it: it is
// kept as test/punishment-deleted-flagged.test.ts.
const REGRESSIONS = [
  // A Senior Agent's user lookup of a flagged report's party was listed, person and all, to every
  // signed-in agent (as is the lookup a punishment citing a flagged report enqueues).
  { seed: 777, path: '11', commands: 20, steps: 1, found: 'discipline(636, senior, lookup): GET /discipline/pending named the party' },
  // The Director's user lookup of a party, the party's report flagged after: the lookup request's
  // admin audit row named the person (its target) to a clearance-4 Senior Agent.
  { seed: 2_026_112_801, path: '15', commands: 8, steps: 6, found: 'discipline(350, director, lookup), flag(236, true): GET /admin/audit named the party' },
];

describe(`the confidentiality model on ${storeName}`, () => {
  for (const r of REGRESSIONS) {
    it(`regression: ${r.found}`, async () => {
      await runModel(1, r.commands, r.seed, r);
    }, 300_000);
  }

  it('no answer to those below supervisor rank carries a flagged report\'s texts or parties, after any sequence', async () => {
    await runModel(CAMPAIGN > 0 ? CAMPAIGN : runs(1, 10), runs(8, 20), seedOf('CONFIDENTIALITY_MODEL_SEED', 38_001));
  }, Math.max(600_000, CAMPAIGN * 120_000));
});
