// Report list pages and audit answers are read fresh on every request (issue 13 removed their
// caches): whoever wrote a change, the next request shows it. ChangeCache still serves the idle
// bot queues (src/queue/idle.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChangeCache } from '../src/platform/cache/change-cache.js';
import { openPostgres } from '../src/platform/db/postgres.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { onPostgres } from './helpers/stores.js';

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

// One app for the two blocks below: the audit case searches only for what it writes itself.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t?.close());

describe('GET /reports pages', () => {
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

  it("show a change written behind the service's back on the very next request", async () => {
    const before = await firstPage();
    await t.db.production.query(`update reports set status = 'Pending' where report_id = 'PAGE-OWN-1'`);
    await t.db.production.query(
      `insert into reports (report_id, reporter, reported, reason, notes, evidence) values ('PAGE-BEHIND-1', '1', '2', 'r', '', '')`,
    );
    const after = await firstPage();
    expect(after.reports[0]!.report_id).toBe('PAGE-BEHIND-1');
    expect(after.total).toBe(before.total + 1);
  });

  it.runIf(onPostgres)('across instances: a report created on one instance appears on the other (PostgreSQL only)', async () => {
    const other = await createTestApp({ openDb: { production: async () => openPostgres({ connectionString: t.urls.production! }) } });
    try {
      const before = await firstPage(other.app);
      const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: body('PAGE-OTHER-1') });
      expect(res.statusCode).toBe(201);
      const after = await firstPage(other.app);
      expect(after.reports[0]!.report_id).toBe('PAGE-OTHER-1');
      expect(after.total).toBe(before.total + 1);
    } finally {
      await other.close();
    }
  });
});

describe('GET /audit answers', () => {
  const search = async (term: string) => {
    const res = await t.app.inject({ url: `/audit?search=${term}`, headers: key });
    expect(res.statusCode).toBe(200);
    return res.json() as { total: number };
  };

  it("show this instance's own events and others' on the very next request", async () => {
    expect((await search('audit-cache-1')).total).toBe(0);
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: body('AUDIT-CACHE-1') });
    expect(res.statusCode).toBe(201);
    expect((await search('audit-cache-1')).total).toBe(1);

    await t.db.production.query(`insert into events (type, actor_kind, report_id, correlation_id) values ('report.updated', 'system', 'AUDIT-CACHE-1', 'c')`);
    expect((await search('audit-cache-1')).total).toBe(2);
  });
});
