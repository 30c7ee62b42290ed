// GET /generate/* and POST /util/timestamp (spec: Generators and utilities). Key only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateId, ID_KINDS } from '../src/platform/ids.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { seedReportBody } from './helpers/reports.js';
import { switchableDatabase } from './helpers/failures.js';

const key = { authorization: PRODUCTION_KEY };
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const FORMATS: Record<string, RegExp> = {
  agreement: /^AGM-\d{5}$/,
  agent: /^SVC-AG-\d{5}$/,
  join: /^SC-\d{3}X\d$/,
  case: /^SVC-CASE-\d{5}$/,
  investigation: /^INV-\d{5}$/,
  clearance: /^CL-\d{3}$/,
};

/** How many different ids each kind can draw (10 to the power of its digits). */
const SPACE: Record<string, number> = { agreement: 1e5, agent: 1e5, join: 1e4, case: 1e5, investigation: 1e5, clearance: 1e3 };

/**
 * Distinct ids that n uniform draws from `space` values give on average, and six standard
 * deviations below that: a generator drawing from 95% of the space or less falls under it
 * (1 in 10^9 for a uniform one).
 */
function distinctFloor(space: number, n: number): number {
  const miss = Math.exp(-n / space);
  const sd = Math.sqrt(space * miss * (1 - (1 + n / space) * miss));
  return space * (1 - (1 - 1 / space) ** n) - 6 * sd;
}

describe('GET /generate/<kind>', () => {
  it.each(Object.entries(FORMATS))('%s ids hold their format over 1,000 draws through the route, every digit position taking all ten values', async (kind, format) => {
    const digitsAt = new Map<number, Set<string>>();
    for (let batch = 0; batch < 10; batch++) {
      const responses = await Promise.all(Array.from({ length: 100 }, () => t.app.inject({ url: `/generate/${kind}`, headers: key })));
      for (const res of responses) {
        expect(res.statusCode).toBe(200);
        const body = res.json() as { success: boolean; id: string };
        expect(Object.keys(body).sort()).toEqual(['id', 'success']);
        expect(body.success).toBe(true);
        expect(body.id).toMatch(format);
        [...body.id].forEach((ch, i) => /\d/.test(ch) && digitsAt.set(i, (digitsAt.get(i) ?? new Set()).add(ch)));
      }
    }
    // A value missed at a position in 1,000 uniform draws: 1 in 10^45.
    expect(digitsAt.size).toBe(Math.round(Math.log10(SPACE[kind]!)));
    for (const digits of digitsAt.values()) expect(digits.size).toBe(10);
  });

  // The route's generator itself, 100,000 times per kind (10,000 requests cost seconds a kind):
  // the ids are not drawn from a pool smaller than the format's space.
  it.each(ID_KINDS)('%s ids: 100,000 draws find the whole space, not a pool within it', (kind) => {
    const n = 100_000;
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) seen.add(generateId(kind));
    expect(seen.size).toBeGreaterThanOrEqual(Math.ceil(distinctFloor(SPACE[kind]!, n)));
    for (const id of seen) expect(id).toMatch(FORMATS[kind]!);
  });

  it.each([[{}], [{ authorization: 'wrong' }]])('refuses without the key: 401 %j', async (headers) => {
    const res = await t.app.inject({ url: '/generate/case', headers });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ success: false });
  });

  it('an unknown generator is a 404', async () => {
    const res = await t.app.inject({ url: '/generate/password', headers: key });
    expect(res.statusCode).toBe(404);
  });
});

describe('POST /util/timestamp', () => {
  const post = (payload: unknown, headers: Record<string, string> = key) =>
    t.app.inject({ method: 'POST', url: '/util/timestamp', headers, payload: payload as object });

  it.each([
    ['Sat Nov 21 2026 11:04:39 GMT+0000 (Coordinated Universal Time)', Date.UTC(2026, 10, 21, 11, 4, 39) / 1000],
    ['Sat Nov 21 2026 12:04:39 GMT+0100 (Central European Standard Time)', Date.UTC(2026, 10, 21, 11, 4, 39) / 1000],
    ['Fri Nov 20 2026 22:34:39 GMT-1230 (Somewhere Far)', Date.UTC(2026, 10, 21, 11, 4, 39) / 1000],
    ['Thu Jan 01 1970 00:00:00 GMT+0000 (UTC)', 0],
    ['Tue Feb 29 2028 23:59:59 GMT+0530 (India Standard Time)', Date.UTC(2028, 1, 29, 18, 29, 59) / 1000],
    ['Wed Dec 31 1969 23:59:59 GMT+0000 (UTC)', -1],
    ['Fri Dec 31 9999 23:59:59 GMT+1400 (Line Islands Time)', Date.UTC(9999, 11, 31, 9, 59, 59) / 1000],
  ])('accepts %j', async (date, expected) => {
    const res = await post({ date });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, timestamp: expected });
  });

  it.each(['UTC', 'Europe/Berlin', 'America/St_Johns', 'Asia/Kathmandu', 'Pacific/Kiritimati', 'America/Los_Angeles'])(
    'agrees with what JavaScript itself prints in %s, across DST changes',
    async (zone) => {
      const previous = process.env.TZ;
      process.env.TZ = zone; // Node re-reads TZ when it is assigned
      try {
        for (let i = 0; i < 100; i++) {
          const ms = 1_700_000_000_000 + i * 3_601_234_567;
          const date = new Date(ms).toString();
          if (zone === 'Asia/Kathmandu') expect(date).toContain('GMT+0545');
          const res = await post({ date });
          expect(res.json(), date).toEqual({ success: true, timestamp: Math.floor(ms / 1000) });
        }
      } finally {
        if (previous === undefined) delete process.env.TZ;
        else process.env.TZ = previous;
      }
    },
  );

  it.each([
    ['2026-11-21T11:04:39Z', 'ISO form'],
    ['1795255479', 'a number as text'],
    ['Sat Nov 21 2026 11:04:39 GMT+0000', 'no zone name'],
    ['Sat Nov 21 2026 11:04:39 (UTC)', 'no offset'],
    ['Sat Nov 21 2026 11:04:39 GMT+00:00 (UTC)', 'offset with a colon'],
    ['Sun Nov 21 2026 11:04:39 GMT+0000 (UTC)', 'wrong weekday'],
    ['Sat Nov 31 2026 11:04:39 GMT+0000 (UTC)', 'day past the month'],
    ['Sun Feb 29 2026 11:04:39 GMT+0000 (UTC)', 'Feb 29 in a common year'],
    ['Sat Nov 21 2026 24:00:00 GMT+0000 (UTC)', 'hour 24'],
    ['Sat Nov 21 2026 11:60:00 GMT+0000 (UTC)', 'minute 60'],
    ['Sat Nov 21 2026 11:04:60 GMT+0000 (UTC)', 'leap second'],
    ['Sat Nov 21 2026 11:04:39 GMT+1500 (UTC)', 'offset past 14 hours'],
    ['Sat Nov 21 2026 11:04:39 GMT+0060 (UTC)', 'offset minutes 60'],
    ['sat nov 21 2026 11:04:39 GMT+0000 (UTC)', 'lowercase names'],
    ['Sat Nov 21 2026 11:04:39 GMT+0000 ()', 'empty zone name'],
    [' Sat Nov 21 2026 11:04:39 GMT+0000 (UTC)', 'leading space'],
    ['Sat Nov 21 2026 11:04:39 GMT+0000 (UTC) extra', 'trailing text'],
    ['Saturday November 21 2026 11:04:39 GMT+0000 (UTC)', 'long names'],
    ['Invalid Date', 'the invalid date string'],
    ['', 'empty'],
  ])('refuses %j (%s): 400', async (date) => {
    const res = await post({ date });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      success: false,
      error: 'body.date is not a JavaScript Date string such as "Sat Nov 21 2026 11:04:39 GMT+0100 (Central European Standard Time)"',
      code: 'VALIDATION_ERROR',
    });
  });

  it.each([
    [{}, 'body.date is required'],
    [{ date: null }, 'body.date must be string'],
    [{ date: 1795255479 }, 'body.date must be string'],
  ])('missing or mistyped date %j: 400', async (payload, error) => {
    const res = await post(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, error, code: 'VALIDATION_ERROR' });
  });

  it('needs the key: 401', async () => {
    const res = await post({ date: 'Thu Jan 01 1970 00:00:00 GMT+0000 (UTC)' }, {});
    expect(res.statusCode).toBe(401);
  });
});

describe('POST /util/timestamp changes nothing: an Idempotency-Key on it is no reason to need the database', () => {
  let database: Awaited<ReturnType<typeof switchableDatabase>>;
  let other: TestApp;
  beforeAll(async () => {
    database = await switchableDatabase();
    other = await createTestApp({ openDb: { production: database.open } });
  });
  afterAll(async () => {
    database?.setDown(false);
    await other?.close();
  });

  it('answers 200 with a key while the database is down, and is not declared keyed in the OpenAPI document', async () => {
    database.setDown(true);
    const headers = { ...key, 'idempotency-key': 'timestamp-1' };
    const res = await other.app.inject({ method: 'POST', url: '/util/timestamp', headers, payload: { date: 'Thu Jan 01 1970 00:00:00 GMT+0000 (UTC)' } });
    expect({ status: res.statusCode, body: res.json(), replayed: res.headers['idempotent-replayed'] }).toEqual({ status: 200, body: { success: true, timestamp: 0 }, replayed: undefined });
    // A change still needs it: its key is looked up first.
    const change = await other.app.inject({ method: 'POST', url: '/reports/create', headers, payload: seedReportBody('UT-1', chatId()) });
    expect({ status: change.statusCode, code: change.json().code }).toEqual({ status: 503, code: 'DATABASE_UNAVAILABLE' });
    database.setDown(false);
    const doc = (await other.app.inject({ url: '/openapi.json' })).json();
    const parameters: { in: string; name: string }[] = doc.paths['/util/timestamp'].post.parameters ?? [];
    expect(parameters.filter((p) => p.in === 'header' && p.name === 'idempotency-key')).toEqual([]);
    expect(Object.keys(doc.paths['/util/timestamp'].post.responses)).not.toContain('422');
  });
});
