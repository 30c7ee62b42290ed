// The session cache: what it keeps, when it refuses to keep, and that it stays off while
// notifications could be missed.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SessionCache } from '../../src/platform/auth/session-cache.js';
import type { SessionAgent } from '../../src/platform/auth/sessions.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { signedIn } from '../helpers/identity.js';
import { adminQuery, onPostgres } from '../helpers/stores.js';

const session = (chatId: string, expiresAt = '2999-01-01T00:00:00.000Z') =>
  ({ agent: { chat_id: chatId }, allowlisted: false, expiresAt }) as unknown as SessionAgent;

describe('SessionCache', () => {
  it('keeps nothing until it is live, and forgets everything when it stops being live', () => {
    const cache = new SessionCache();
    cache.store('t1', session('1'), cache.mark());
    expect(cache.get('t1')).toBeUndefined();
    cache.setLive(true);
    cache.store('t1', session('1'), cache.mark());
    expect(cache.get('t1')).toEqual(session('1'));
    cache.setLive(false);
    expect(cache.get('t1')).toBeUndefined();
  });

  it('refuses a read that an invalidation overtook (the read may predate the change)', () => {
    const cache = new SessionCache();
    cache.setLive(true);
    const mark = cache.mark();
    cache.invalidate('someone else entirely');
    cache.store('t1', session('1'), mark);
    expect(cache.get('t1')).toBeUndefined();
  });

  it('drops every session of an agent on invalidate, and only theirs', () => {
    const cache = new SessionCache();
    cache.setLive(true);
    cache.store('a1', session('1'), cache.mark());
    cache.store('a2', session('1'), cache.mark());
    cache.store('b1', session('2'), cache.mark());
    cache.invalidate('1');
    expect([cache.get('a1'), cache.get('a2'), cache.get('b1')]).toEqual([undefined, undefined, session('2')]);
    expect(cache.size).toBe(1);
  });

  it('lets an entry lapse with its session, and after a minute at most', () => {
    const cache = new SessionCache();
    cache.setLive(true);
    const now = Date.parse('2026-11-21T12:00:00.000Z');
    cache.store('short', session('1', '2026-11-21T12:00:10.000Z'), cache.mark(), now);
    cache.store('long', session('2'), cache.mark(), now);
    expect(cache.get('short', now + 9_000)).toBeDefined();
    expect(cache.get('short', now + 10_000)).toBeUndefined();
    expect(cache.get('long', now + 59_000)).toBeDefined();
    expect(cache.get('long', now + 60_000)).toBeUndefined();
  });
});

describe.runIf(onPostgres)('losing the notification connection (PostgreSQL only)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('turns the cache off until the connection is back, so no change can be missed', async () => {
    const person = await signedIn(t, { clearance: 2 });
    const me = () => t.app.inject({ url: '/auth/me', headers: person.headers });
    expect((await me()).statusCode).toBe(200);
    const cache = t.environments.get('production')!.sessions;
    expect(cache.size).toBeGreaterThan(0);

    const database = new URL(t.urls.production!).pathname.slice(1);
    await adminQuery(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database}' and application_name like '%:listen'`,
    );
    await vi.waitFor(() => expect(cache.size).toBe(0), { timeout: 5000 });
    // A change while nobody listens is seen at once: nothing is cached meanwhile.
    await t.db.production.query(`update agents set clearance_level = 1 where chat_id = $1::text`, [person.agent.chat_id]);
    expect((await me()).json().permissions.manage_dockets).toBe(false);

    // The listener comes back by itself and caching resumes.
    await vi.waitFor(
      async () => {
        await me();
        expect(cache.size).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 200 },
    );
  });
});
