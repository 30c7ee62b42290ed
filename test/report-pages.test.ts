// The report list page cache: kept until reports change, cleared by this instance's own commits at
// once and by other writers' notifications, off while notifications could be missed.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ChangeCache } from '../src/platform/cache/change-cache.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { adminQuery, onPostgres } from './helpers/stores.js';

const key = { authorization: PRODUCTION_KEY };
const body = (id: string) => ({ report_id: id, reporter: chatId(), reported: chatId(), reason: 'Page cache check', notes: 'n', evidence: 'e' });

describe('ChangeCache', () => {
  it('keeps nothing until live, refuses a read a change overtook, forgets everything on clear and when it stops being live', () => {
    const cache = new ChangeCache<number>();
    cache.store('a', 1, cache.mark());
    expect(cache.get('a')).toBeUndefined();
    cache.setLive(true);
    const mark = cache.mark();
    cache.clear();
    cache.store('a', 1, mark);
    expect(cache.get('a')).toBeUndefined();
    cache.store('a', 2, cache.mark());
    expect(cache.get('a')).toBe(2);
    cache.setLive(false);
    expect(cache.get('a')).toBeUndefined();
  });

  it('lets entries lapse after their time to live', () => {
    const cache = new ChangeCache<number>(1000);
    cache.setLive(true);
    cache.store('a', 1, cache.mark(), 0);
    expect(cache.get('a', 999)).toBe(1);
    expect(cache.get('a', 1000)).toBeUndefined();
  });
});

describe('GET /reports pages', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const firstPage = async (app = t.app) => {
    const res = await app.inject({ url: '/reports?limit=5', headers: key });
    expect(res.statusCode).toBe(200);
    return res.json() as { total: number; reports: { report_id: string }[] };
  };

  it("show this instance's own change on the very next request", async () => {
    const before = await firstPage(); // now kept
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: body('PAGE-OWN-1') });
    expect(res.statusCode).toBe(201);
    const after = await firstPage();
    expect(after.total).toBe(before.total + 1);
    expect(after.reports[0]!.report_id).toBe('PAGE-OWN-1');
  });

  it("show a change written behind the service's back once its notification arrives", async () => {
    const before = await firstPage();
    await t.db.production.query(`update reports set status = 'Pending' where report_id = 'PAGE-OWN-1'`);
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence) values ('PAGE-BEHIND-1', '1', '2', 'r', '', '')`,
    );
    await vi.waitFor(async () => expect((await firstPage()).reports[0]!.report_id).toBe('PAGE-BEHIND-1'), { timeout: 5000, interval: 20 });
    expect((await firstPage()).total).toBe(before.total + 1);
  });

  it.runIf(onPostgres)('across instances: a report created on one instance appears on the other (PostgreSQL only)', async () => {
    const other = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: t.urls.production! }) } });
    try {
      const before = await firstPage(other.app); // kept on the other instance
      const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: body('PAGE-OTHER-1') });
      expect(res.statusCode).toBe(201);
      await vi.waitFor(async () => expect((await firstPage(other.app)).reports[0]!.report_id).toBe('PAGE-OTHER-1'), { timeout: 5000, interval: 20 });
      expect((await firstPage(other.app)).total).toBe(before.total + 1);
    } finally {
      await other.close();
    }
  });

  it.runIf(onPostgres)('are not kept while the notification connection is down (PostgreSQL only)', async () => {
    await firstPage();
    const pages = t.environments.get('production')!.reportPages;
    expect(pages.size).toBeGreaterThan(0);
    const database = new URL(t.urls.production!).pathname.slice(1);
    await adminQuery(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database}' and application_name like '%:listen'`);
    await vi.waitFor(() => expect(pages.size).toBe(0), { timeout: 5000 });
    await t.db.production.query(`insert into reports (report_id, reporter, reported, reason, notes, evidence) values ('PAGE-DOWN-1', '1', '2', 'r', '', '')`);
    expect((await firstPage()).reports[0]!.report_id).toBe('PAGE-DOWN-1');
    await vi.waitFor(
      async () => {
        await firstPage();
        expect(pages.size).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 200 },
    );
  });
});

describe('GET /audit answers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const search = async (term: string) => {
    const res = await t.app.inject({ url: `/audit?search=${term}`, headers: key });
    expect(res.statusCode).toBe(200);
    return res.json() as { total: number };
  };

  it("show this instance's own events on the very next request, and others' once their notification arrives", async () => {
    expect((await search('audit-cache-1')).total).toBe(0); // now kept
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: body('AUDIT-CACHE-1') });
    expect(res.statusCode).toBe(201);
    expect((await search('audit-cache-1')).total).toBe(1);

    await t.db.production.query(`insert into events (type, actor_kind, report_id, correlation_id) values ('report.updated', 'system', 'AUDIT-CACHE-1', 'c')`);
    await vi.waitFor(async () => expect((await search('audit-cache-1')).total).toBe(2), { timeout: 5000, interval: 20 });
  });
});
