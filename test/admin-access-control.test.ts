// require_admin on every administration route (spec Authentication 5 to 7): no credential 401, the
// bot key 403, no active allowlist entry "Not an admin user", a Director-only capability without
// Director rank "Director access required", too low a clearance "Insufficient clearance". Each
// refusal comes before the body is read and writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { admin, trailCounts } from './helpers/admin.js';
import { signedIn } from './helpers/identity.js';

type Route = { method: 'GET' | 'POST' | 'PATCH'; url: string; director: boolean; clearance: number };
const ROUTES: Route[] = [
  { method: 'GET', url: '/admin/health', director: false, clearance: 4 },
  { method: 'GET', url: '/admin/queue', director: false, clearance: 4 },
  { method: 'POST', url: '/admin/queue/1/requeue', director: false, clearance: 4 },
  { method: 'POST', url: '/admin/queue/1/cancel', director: false, clearance: 4 },
  { method: 'POST', url: '/admin/queue/sweep', director: false, clearance: 4 },
  { method: 'GET', url: '/admin/audit', director: false, clearance: 4 },
  { method: 'GET', url: '/admin/agents', director: false, clearance: 4 },
  { method: 'PATCH', url: '/admin/agents/300000000000000009', director: false, clearance: 4 },
  { method: 'GET', url: '/admin/access', director: true, clearance: 1 },
  { method: 'POST', url: '/admin/access/grant', director: true, clearance: 1 },
  { method: 'POST', url: '/admin/access/revoke', director: true, clearance: 1 },
  { method: 'POST', url: '/admin/access/remove', director: true, clearance: 1 },
  { method: 'GET', url: '/admin/reports', director: true, clearance: 5 },
  { method: 'POST', url: '/admin/reports/R-1/correct', director: true, clearance: 5 },
  { method: 'GET', url: '/admin/schema', director: true, clearance: 5 },
  { method: 'POST', url: '/admin/schema/reload', director: true, clearance: 5 },
  { method: 'GET', url: '/admin/subjects/300000000000000009', director: true, clearance: 1 },
  { method: 'POST', url: '/admin/subjects/300000000000000009/erase', director: true, clearance: 1 },
];

const refusal = (error: string, code: string) => ({ success: false, error, code });
const label = (r: Route) => `${r.method} ${r.url}`;

describe('require_admin on every admin route', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  // A body that would pass validation is irrelevant: the guard answers first, so none is sent.
  const send = (route: Route, headers: Record<string, string>) =>
    t.app.inject({ method: route.method, url: route.url, headers: { host: 'localhost', ...headers } });

  it('lists every admin route in the OpenAPI document, each refusing the bot key', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: 'localhost' } })).json();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => path.startsWith('/admin'))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const expected = ROUTES.map((r) => `${r.method} ${r.url.replace('/300000000000000009', '/{chat_id}').replace(/\/\d+\//, '/{action_id}/').replace('/R-1/', '/{report_id}/')}`).sort();
    expect(documented).toEqual(expected);
  });

  it('answers 401 without a credential and 403 to the bot key, writing nothing', async () => {
    const before = await trailCounts(t);
    for (const route of ROUTES) {
      const anonymous = await send(route, {});
      expect(anonymous.statusCode, label(route)).toBe(401);
      const bot = await send(route, { authorization: PRODUCTION_KEY });
      expect(bot.statusCode, label(route)).toBe(403);
      expect(bot.json(), label(route)).toMatchObject({ success: false, code: 'SESSION_REQUIRED' });
    }
    expect(await trailCounts(t)).toEqual(before);
  });

  it('refuses a clearance-5 Director who is not on the allowlist, or whose entry is revoked', async () => {
    const outsider = await signedIn(t, { rank: 'Director', clearance: 5 });
    const revoked = await admin(t);
    await t.db.production.query('update admin_allowlist set active = false where chat_id = $1::text', [revoked.agent.chat_id]);
    const before = await trailCounts(t);
    for (const person of [outsider, revoked]) {
      for (const route of ROUTES) {
        const res = await send(route, person.headers);
        expect(res.statusCode, label(route)).toBe(403);
        expect(res.json(), label(route)).toEqual(refusal('Not an admin user', 'NOT_ADMIN'));
      }
    }
    expect(await trailCounts(t)).toEqual(before);
  });

  it('refuses an allowlisted agent who is not active', async () => {
    const suspended = await admin(t, { status: 'onboarding' });
    const res = await send(ROUTES[0]!, suspended.headers);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(refusal('Not an admin user', 'NOT_ADMIN'));
  });

  it('keeps the Director-only capabilities from a clearance-5 Head Investigator and lets the others through', async () => {
    const head = await admin(t, { rank: 'Head Investigator' });
    for (const route of ROUTES) {
      const res = await send(route, head.headers);
      if (route.director) {
        expect(res.statusCode, label(route)).toBe(403);
        expect(res.json(), label(route)).toEqual(refusal('Director access required', 'DIRECTOR_REQUIRED'));
      } else {
        // Past the guard: a GET answers, a mutation without its body is a 400 (or 415 without a type).
        expect([200, 400, 415], label(route)).toContain(res.statusCode);
      }
    }
  });

  it('asks for the capability clearance: 3 is not enough for the clearance-4 routes, 4 not for reports and schema', async () => {
    for (const clearance of [3, 4]) {
      const director = await admin(t, { clearance });
      for (const route of ROUTES) {
        const res = await send(route, director.headers);
        if (route.clearance > clearance) {
          expect(res.statusCode, `${label(route)} at ${clearance}`).toBe(403);
          expect(res.json(), label(route)).toEqual(refusal('Insufficient clearance', 'INSUFFICIENT_CLEARANCE'));
        } else {
          expect([200, 400, 415], `${label(route)} at ${clearance}`).toContain(res.statusCode);
        }
      }
    }
  });

  it('reports the capabilities through GET /auth/me as the guard decides them', async () => {
    const head = await admin(t, { rank: 'Head Investigator', clearance: 4 });
    const me = (await t.app.inject({ method: 'GET', url: '/auth/me', headers: head.headers })).json();
    expect(me.admin).toEqual({
      allowlisted: true,
      capabilities: { admin_health: true, admin_queue: true, admin_audit: true, admin_agents: true, admin_reports: false, admin_schema: false, admin_access: false },
    });
  });
});
