// The training center's reads (spec: Training center; issue 11): who is a trainer, the catalog
// with its drafts, the trainees; browser sessions only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAgent } from '../src/agents/queries.js';
import { DEMO_SCENARIOS } from '../src/demo/seed-scenarios.js';
import { upsertScenarios } from '../src/training/scenario-queries.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';

describe('training center reads', () => {
  let t: TestApp;
  let trainer: Person;
  let supervisor: Person;
  let agent: Person;
  const get = (url: string, headers: Record<string, string>) => t.app.inject({ method: 'GET', url, headers });

  beforeAll(async () => {
    t = await createTestApp();
    trainer = await signedIn(t, { rank: 'Agent', is_trainer: true, name: 'Jordan Pike' });
    supervisor = await signedIn(t, { rank: 'Supervisor', clearance: 4 });
    agent = await signedIn(t, { rank: 'Agent' });
    await t.db.production.transaction((tx) => upsertScenarios(tx, DEMO_SCENARIOS));
  });
  afterAll(() => t.close());

  it('GET /training/me says whether the agent trains: the flag or supervisor rank', async () => {
    for (const [person, expected] of [[trainer, true], [supervisor, true], [agent, false]] as const) {
      const res = await get('/training/me', person.headers);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ success: true, is_trainer: expected, agent: { chat_id: person.agent.chat_id } });
    }
  });

  it('GET /training/scenarios lists every scenario, drafts included, by title, with its definition', async () => {
    const res = await get('/training/scenarios', trainer.headers);
    expect(res.statusCode).toBe(200);
    const scenarios = res.json().scenarios as { slug: string; title: string; published: boolean; definition: unknown }[];
    expect(scenarios.map((s) => [s.title, s.published])).toEqual([
      ['Ban evasion with an alternate account', true],
      ['First response: a harassment report', true],
      ['Reviewing an appeal (draft)', false],
    ]);
    expect(scenarios[1]!.definition).toEqual(DEMO_SCENARIOS[0]!.definition);
  });

  it('GET /training/trainees lists agents whose status is exactly onboarding, by name', async () => {
    const names = ['Zoe Trainee', 'Adam Trainee'];
    for (const name of names) await insertAgent(t.db.production, { chat_id: chatId(), name, status: 'onboarding', agent_rank: 'Agent', clearance_level: 1 });
    await insertAgent(t.db.production, { chat_id: chatId(), name: 'Already Active', status: 'active', agent_rank: 'Agent', clearance_level: 1 });
    const res = await get('/training/trainees', supervisor.headers);
    expect(res.statusCode).toBe(200);
    const trainees = res.json().trainees as { name: string; status: string }[];
    expect(trainees.map((a) => a.name)).toEqual(['Adam Trainee', 'Zoe Trainee']);
    expect(trainees.every((a) => a.status === 'onboarding')).toBe(true);
  });

  it('keeps the catalog and the trainees to trainers, and every route from the bot key', async () => {
    for (const url of ['/training/scenarios', '/training/trainees']) {
      const res = await get(url, agent.headers);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ success: false, error: 'Trainers only: the is_trainer flag or supervisor rank', code: 'TRAINER_REQUIRED' });
    }
    for (const url of ['/training/me', '/training/scenarios', '/training/trainees']) {
      const bot = await get(url, { host: 'localhost', authorization: PRODUCTION_KEY });
      expect(bot.statusCode).toBe(403);
      expect(bot.json().code).toBe('SESSION_REQUIRED');
      expect((await get(url, { host: 'localhost' })).statusCode).toBe(401);
    }
  });

  it('serves the demo environment its seeded scenarios', async () => {
    const demoTrainer = await signedIn(t, { env: 'demo', rank: 'Supervisor', clearance: 4 });
    const res = await get('/training/scenarios', demoTrainer.headers);
    expect(res.json().scenarios.map((s: { slug: string }) => s.slug)).toEqual(['ban-evasion', 'first-response', 'appeal-review']);
  });
});
