// GET /generate/* and POST /util/timestamp (spec: Generators and utilities). Key only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';

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

describe('GET /generate/<kind>', () => {
  it.each(Object.entries(FORMATS))('%s ids hold their format over 10,000 draws, every digit position random', async (kind, format) => {
    const seen = new Set<string>();
    const digitsAt = new Map<number, Set<string>>();
    for (let batch = 0; batch < 100; batch++) {
      const responses = await Promise.all(Array.from({ length: 100 }, () => t.app.inject({ url: `/generate/${kind}`, headers: key })));
      for (const res of responses) {
        expect(res.statusCode).toBe(200);
        const body = res.json() as { success: boolean; id: string };
        expect(Object.keys(body).sort()).toEqual(['id', 'success']);
        expect(body.success).toBe(true);
        expect(body.id).toMatch(format);
        seen.add(body.id);
        [...body.id].forEach((ch, i) => /\d/.test(ch) && digitsAt.set(i, (digitsAt.get(i) ?? new Set()).add(ch)));
      }
    }
    // Every digit position takes all ten values; the ids are not drawn from a small pool.
    for (const digits of digitsAt.values()) expect(digits.size).toBe(10);
    expect(seen.size).toBeGreaterThan(kind === 'clearance' ? 990 : 6000);
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
