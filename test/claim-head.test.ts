// The claiming GETs (/actions/next, /discipline/next) change state; Fastify answers HEAD for every
// GET route by running the GET's handler and dropping the body. A HEAD (a monitor's probe, a
// careless client) must not take an item it never hands out: 405 with Allow: GET (found by the
// review of issue 41's change).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';

const bot = { authorization: PRODUCTION_KEY };

describe(`HEAD on a claiming GET, on ${storeName}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('HEAD /actions/next claims nothing: the pending action is still handed to the next GET', async () => {
    const body = { report_id: `RV-HEAD-${process.pid}-${chatId()}`, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' };
    expect((await t.app.inject({ method: 'POST', url: '/reports/create', headers: bot, payload: body })).statusCode).toBe(201);
    expect((await t.app.inject({ method: 'POST', url: `/reports/${body.report_id}/action`, headers: bot, payload: { action: 'contact_reporter', reason: 'Ask' } })).statusCode).toBe(200);
    const head = await t.app.inject({ method: 'HEAD', url: '/actions/next', headers: bot });
    const { rows } = await t.db.production.query<{ status: string; attempts: number }>('select status, attempts from report_actions where report_id = $1', [body.report_id]);
    const next = await t.app.inject({ url: '/actions/next', headers: bot });
    expect({ head: head.statusCode, allow: head.headers.allow, action: rows[0], next: next.statusCode }).toEqual({ head: 405, allow: 'GET', action: { status: 'pending', attempts: 0 }, next: 200 });
    expect(next.json().action).toMatchObject({ report_id: body.report_id, status: 'processing', attempts: 1 });
  });
});
