// Rotating the bot's key (issue 20): while <ENV>_API_KEY_PREVIOUS is set, the old key is accepted
// beside the new one with the same permissions; its uses are counted and logged at most once a
// minute per environment; unset, it is refused; never in the other environment.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PREVIOUS_KEY_LOG_INTERVAL_MS } from '../src/platform/auth/api-key.js';
import { createTestApp, DEMO_KEY, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { capturedLog } from './helpers/log-capture.js';
import { createMetricsTestApp, scrape, value, type MetricsTestApp } from './helpers/metrics.js';
import { reportCrudHelpers, type Row } from './helpers/reports.js';

const PRODUCTION_PREVIOUS = 'test-production-key-previous-0123';
const DEMO_PREVIOUS = 'test-demo-key-previous-0123';
const ROTATING = { PRODUCTION_API_KEY_PREVIOUS: PRODUCTION_PREVIOUS, DEMO_API_KEY_PREVIOUS: DEMO_PREVIOUS };
const DEMO_HOST = 'demo.localhost';
const invalidKey = { success: false, error: 'Invalid API key', code: 'UNAUTHORIZED' };

/** The parts of a report that do not depend on its id, its place in creation order or the moment it was written. */
function comparable(report: Row): Row {
  const { report_id: _id, creation_order: _n, created_at: _c, updated_at: _u, timeline, evidence_list, ...rest } = report;
  return {
    ...rest,
    timeline: (timeline as Row[]).map(({ event, actor_kind, actor_chat_id }) => ({ event, actor_kind, actor_chat_id })),
    evidence_list: (evidence_list as Row[]).map(({ description, url, submitted_by }) => ({ description, url, submitted_by })),
  };
}

// One app with both previous keys set for the next two blocks: the uses first, counted and logged
// from none, then the keys' answers.
let t: TestApp;
const log = capturedLog();
beforeAll(async () => {
  t = await createTestApp({ env: ROTATING, environmentLogger: log.logger });
});
afterAll(() => t.close());

describe('uses of the previous key', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const call = (authorization: string, host = 'localhost') => t.app.inject({ url: '/generate/case', headers: { host, authorization } });
  const warnings = () => log.lines.filter((l) => l.level === 40);
  const line = (env: 'production' | 'demo', count: number, total: number) => ({
    level: 40,
    environment: env,
    count,
    total,
    msg: `request authenticated with ${env.toUpperCase()}_API_KEY_PREVIOUS; unset it once the bot uses the new key`,
  });

  it('are counted, and logged at most once a minute per environment with the count since the last line', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.parse('2026-05-01T12:00:00Z');
    vi.setSystemTime(start);

    expect((await call(PRODUCTION_PREVIOUS)).statusCode).toBe(200);
    expect(warnings()).toEqual([expect.objectContaining(line('production', 1, 1))]);

    vi.setSystemTime(start + 30_000);
    for (let i = 0; i < 3; i++) expect((await call(PRODUCTION_PREVIOUS)).statusCode).toBe(200);
    // Neither the current key nor a wrong one is counted.
    expect((await call(PRODUCTION_KEY)).statusCode).toBe(200);
    expect((await call('not-a-key-at-all-0000')).statusCode).toBe(401);
    expect(warnings()).toHaveLength(1);
    // Each environment has its own minute.
    expect((await call(DEMO_PREVIOUS, DEMO_HOST)).statusCode).toBe(200);
    expect(warnings()).toEqual([expect.objectContaining(line('production', 1, 1)), expect.objectContaining(line('demo', 1, 1))]);

    vi.setSystemTime(start + PREVIOUS_KEY_LOG_INTERVAL_MS - 1);
    expect((await call(PRODUCTION_PREVIOUS)).statusCode).toBe(200);
    expect(warnings()).toHaveLength(2);

    vi.setSystemTime(start + PREVIOUS_KEY_LOG_INTERVAL_MS);
    expect((await call(PRODUCTION_PREVIOUS)).statusCode).toBe(200);
    expect(warnings()).toHaveLength(3);
    expect(warnings()[2]).toEqual(expect.objectContaining(line('production', 5, 6)));

    expect(t.environments.apiKeys('production').previousKeyUses).toBe(6);
    expect(t.environments.apiKeys('demo').previousKeyUses).toBe(1);
    expect(t.environments.get('production')!.apiKeys).toBe(t.environments.apiKeys('production'));
    expect(JSON.stringify(log.lines)).not.toContain(PRODUCTION_PREVIOUS);
  });
});

describe('while PRODUCTION_API_KEY_PREVIOUS and DEMO_API_KEY_PREVIOUS are set', () => {
  const { base, reportRow, timeline, events, evidence, create } = reportCrudHelpers(() => t);

  it('the previous key does what the current key does: same status, same answer, same rows written', async () => {
    const body = { status: 'Pending', reporter_name: 'Rae', evidence_url: 'https://cdn.example.test/clip.mp4' };
    const viaCurrent = await create({ ...base(), ...body }, { authorization: PRODUCTION_KEY });
    const viaPrevious = await create({ ...base(), ...body, reporter: viaCurrent.res.json().report.reporter, reported: viaCurrent.res.json().report.reported }, { authorization: PRODUCTION_PREVIOUS });
    expect(viaCurrent.res.statusCode).toBe(201);
    expect(viaPrevious.res.statusCode).toBe(201);
    expect(comparable(viaPrevious.res.json().report)).toEqual(comparable(viaCurrent.res.json().report));
    expect(viaPrevious.res.json().report.report_id).toBe(viaPrevious.id);

    const [rowCurrent, rowPrevious] = [await reportRow(viaCurrent.id), await reportRow(viaPrevious.id)];
    expect(rowPrevious).toMatchObject({ status: 'Pending', reporter_name: 'Rae' });
    expect(comparable({ ...rowPrevious, timeline: [], evidence_list: [] })).toEqual(comparable({ ...rowCurrent, timeline: [], evidence_list: [] }));
    expect(await timeline(viaPrevious.id)).toEqual([{ event: 'Report created', actor_kind: 'bot', actor_chat_id: null }]);
    expect(await timeline(viaPrevious.id)).toEqual(await timeline(viaCurrent.id));
    expect(await evidence(viaPrevious.id)).toEqual(await evidence(viaCurrent.id));
    const strip = (rows: Row[]) => rows.map(({ correlation_id: _c, after: _a, ...rest }) => rest);
    expect(strip(await events(viaPrevious.id))).toEqual([expect.objectContaining({ type: 'report.created', actor_kind: 'bot', actor_chat_id: null })]);
    expect(strip(await events(viaPrevious.id))).toEqual(strip(await events(viaCurrent.id)));
  });

  it('holds the same permissions: the same answers on key, either and session-only routes, in both environments', async () => {
    const requests = [
      { host: 'localhost', url: '/generate/case', keys: [PRODUCTION_KEY, PRODUCTION_PREVIOUS] },
      { host: 'localhost', url: '/actions/pending/operator', keys: [PRODUCTION_KEY, PRODUCTION_PREVIOUS] },
      { host: 'localhost', url: '/auth/me', keys: [PRODUCTION_KEY, PRODUCTION_PREVIOUS] },
      { host: DEMO_HOST, url: '/generate/case', keys: [DEMO_KEY, DEMO_PREVIOUS] },
      { host: DEMO_HOST, url: '/auth/me', keys: [DEMO_KEY, DEMO_PREVIOUS] },
    ];
    for (const { host, url, keys } of requests) {
      const [current, previous] = await Promise.all(keys.map((authorization) => t.app.inject({ url, headers: { host, authorization } })));
      expect(previous!.statusCode, `${host}${url}`).toBe(current!.statusCode);
      const shape = (body: Row) => ({ ...body, ...('id' in body ? { id: typeof body.id } : {}) });
      expect(shape(previous!.json()), `${host}${url}`).toEqual(shape(current!.json()));
    }
    expect((await t.app.inject({ url: '/auth/me', headers: { authorization: PRODUCTION_PREVIOUS } })).json()).toMatchObject({ code: 'SESSION_REQUIRED' });
  });

  it("one environment's previous key is refused in the other, and writes nothing", async () => {
    const crossed = [
      { host: DEMO_HOST, authorization: PRODUCTION_PREVIOUS },
      { host: 'localhost', authorization: DEMO_PREVIOUS },
    ];
    for (const headers of crossed) {
      const res = await t.app.inject({ url: '/generate/case', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(invalidKey);
    }
    const { res, id } = await create(base(), { authorization: DEMO_PREVIOUS });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(invalidKey);
    expect(await reportRow(id)).toBeUndefined();
    expect(await events(id)).toEqual([]);
  });
});

describe('once PRODUCTION_API_KEY_PREVIOUS is unset', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('the previous key is refused with 401 and nothing is written', async () => {
    const { base, reportRow, create } = reportCrudHelpers(() => t);
    const { res, id } = await create(base(), { authorization: PRODUCTION_PREVIOUS });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(invalidKey);
    expect(await reportRow(id)).toBeUndefined();
    expect((await t.app.inject({ url: '/generate/case', headers: { authorization: PRODUCTION_KEY } })).statusCode).toBe(200);
    expect(t.environments.apiKeys('production').previousKeyUses).toBe(0);
  });
});

describe('the previous key in the metrics', () => {
  let t: MetricsTestApp;
  beforeAll(async () => {
    t = await createMetricsTestApp({ env: ROTATING });
  });
  afterAll(() => t.close());

  it('counts each environment\'s previous-key requests in cms_api_key_previous_uses_total, and nothing else', async () => {
    const before = await scrape(t.metricsUrl);
    expect(value(before, 'cms_api_key_previous_uses_total', { environment: 'production' })).toBe(0);
    expect(value(before, 'cms_api_key_previous_uses_total', { environment: 'demo' })).toBe(0);
    for (const authorization of [PRODUCTION_PREVIOUS, PRODUCTION_PREVIOUS, PRODUCTION_KEY, 'not-a-key-of-this-service']) {
      await t.app.inject({ method: 'GET', url: '/agents', headers: { authorization } });
    }
    const demo = await t.app.inject({ method: 'GET', url: '/agents', headers: { authorization: DEMO_PREVIOUS, host: DEMO_HOST } });
    expect(demo.statusCode).toBe(200);
    const after = await scrape(t.metricsUrl);
    expect(value(after, 'cms_api_key_previous_uses_total', { environment: 'production' })).toBe(2);
    expect(value(after, 'cms_api_key_previous_uses_total', { environment: 'demo' })).toBe(1);
    expect(t.environments.apiKeys('production').previousKeyUses).toBe(2);
  });
});
