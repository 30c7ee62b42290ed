// Input the database cannot store (NUL, lone surrogates, over-deep JSON) is a 400 naming the field,
// refused before any write, for every part of a request; integer query parameters are bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/platform/http/input-guard.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from '../helpers/app.js';
import { chatId, signedIn } from '../helpers/identity.js';

const key = { authorization: PRODUCTION_KEY };
const json = { ...key, 'content-type': 'application/json' };
const PROBLEM = 'must not contain NUL characters or unpaired surrogates';
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

let n = 0;
const newId = () => `HARD-${process.pid}-${++n}`;
const report = (report_id = newId()) => ({ report_id, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' });
const count = async (table: string) => Number((await t.db.production.query(`select count(*)::int as n from ${table}`)).rows[0]!.n);
const counts = async () => ({ reports: await count('reports'), events: await count('events'), chat_profiles: await count('chat_profiles') });
const invalid = (error: string) => ({ success: false, error, code: 'VALIDATION_ERROR' });

describe('NUL characters and lone surrogates: 400 naming the field, nothing written', () => {
  it.each([
    ['a NUL in a body field', JSON.stringify({ ...report(), report_id: 'a\u0000b' }), `body.report_id ${PROBLEM}`],
    ['a lone high surrogate', JSON.stringify({ ...report(), reason: 'x\ud800y' }), `body.reason ${PROBLEM}`],
    ['a lone low surrogate as a JSON escape', JSON.stringify({ ...report(), notes: 'PLACEHOLDER' }).replace('PLACEHOLDER', 'x\\udc00'), `body.notes ${PROBLEM}`],
    ['an unknown field whose value has a NUL', JSON.stringify({ ...report(), 'extra': '\u0000' }), `body.extra ${PROBLEM}`],
  ])('POST /reports/create with %s', async (_what, payload, message) => {
    const before = await counts();
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: json, payload });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(invalid(message));
    expect(await counts()).toEqual(before);
  });

  it('emoji (well-formed surrogate pairs) are accepted', async () => {
    const body = { ...report(), reason: 'spam 😀 in chat' };
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: json, payload: JSON.stringify(body) });
    expect(res.statusCode).toBe(201);
    expect(res.json().report.reason).toBe('spam 😀 in chat');
  });

  it('a form body (report creation accepts one)', async () => {
    const before = await counts();
    const body = new URLSearchParams({ ...report(), reason: 'a\u0000b' }).toString();
    const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' }, payload: body });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(invalid(`body.reason ${PROBLEM}`));
    expect(await counts()).toEqual(before);
  });

  describe('free-form JSON: a chat profile object, its values and its keys', () => {
    let id: string;
    beforeAll(async () => {
      // Its reporter is the party whose profile the deep body below delivers (a route stores only the parties' profiles).
      const body = { ...report(), reporter: '1002' };
      const res = await t.app.inject({ method: 'POST', url: '/reports/create', headers: key, payload: body });
      expect(res.statusCode).toBe(201);
      id = body.report_id;
    });
    const deliver = (payload: string) => t.app.inject({ method: 'POST', url: `/reports/${id}/chat-profiles`, headers: json, payload });

    it.each([
      ['a nested value', { reporter: { chat_id: '1001', x: { y: 'a\u0000b' } } }, `body.reporter.x.y ${PROBLEM}`],
      ['an array element', { reporter: { chat_id: '1001', list: ['ok', '\udfff'] } }, `body.reporter.list[1] ${PROBLEM}`],
      ['a key', { reporter: { chat_id: '1001', x: { 'bad\u0000key': 1 } } }, `body.reporter.x field names ${PROBLEM}`],
      ['a key with a lone surrogate', { reporter: { chat_id: '1001', ['\ud83d']: true } }, `body.reporter field names ${PROBLEM}`],
    ])('%s', async (_what, payload, message) => {
      const before = await counts();
      const res = await deliver(JSON.stringify(payload));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual(invalid(message));
      expect(await counts()).toEqual(before);
    });

    it(`a body nested ${MAX_JSON_DEPTH} levels is accepted, one more is refused, 5,000 too (no stack overflow)`, async () => {
      const nest = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
      // The body and the reporter object are 2 levels; the objects nested in "x" add the rest.
      const within = `{"reporter":{"chat_id":"1002","x":${nest(MAX_JSON_DEPTH - 2)}}}`;
      expect((await deliver(within)).statusCode).toBe(200);
      const before = await counts();
      for (const levels of [MAX_JSON_DEPTH - 1, 5000]) {
        const res = await deliver(`{"reporter":{"chat_id":"1003","x":${nest(levels)}}}`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual(invalid(`body is nested more than ${MAX_JSON_DEPTH} levels deep`));
      }
      const arrays = await deliver(`{"reporter":{"chat_id":"1003","x":${'['.repeat(5000)}${']'.repeat(5000)}}}`);
      expect(arrays.json()).toEqual(invalid(`body is nested more than ${MAX_JSON_DEPTH} levels deep`));
      expect(await counts()).toEqual(before);
    });
  });

  it.each([
    ['a path parameter', '/reports/a%00b', `params.report_id ${PROBLEM}`],
    ['a query string value', '/audit?search=a%00b', `querystring.search ${PROBLEM}`],
    ['a repeated query string value', '/audit?search=a&search=b%00', `querystring.search[1] ${PROBLEM}`],
    ['a query string key', '/audit?se%00arch=a', `querystring field names ${PROBLEM}`],
  ])('GET with %s', async (_what, url, message) => {
    const res = await t.app.inject({ url, headers: key });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(invalid(message));
  });

  it('the credential is checked first: no key, 401 whatever the input', async () => {
    const res = await t.app.inject({ url: '/reports/a%00b' });
    expect(res.statusCode).toBe(401);
  });
});

describe('integer query parameters have upper bounds the validation answers', () => {
  it.each([
    ['/punishments?offset=2147483648', 'querystring.offset must be <= 1000000000'],
    ['/reports?offset=9999999999999999999', 'querystring.offset must be <= 1000000000'],
    ['/audit?offset=1000000001', 'querystring.offset must be <= 1000000000'],
    ['/actions/9007199254740992/complete', 'params.action_id must be <= 9007199254740991'],
  ])('%s', async (url, message) => {
    // The punishment list is for signed-in agents; the others accept the key.
    const headers = url.startsWith('/punishments') ? (await signedIn(t, { clearance: 2 })).headers : key;
    const method = url.endsWith('/complete') ? 'POST' : 'GET';
    const res = await t.app.inject({ method, url, headers, ...(method === 'POST' ? { payload: { result: 'success', note: 'n' } } : {}) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(invalid(message));
  });

  it('the largest offset is still a page (empty)', async () => {
    const res = await t.app.inject({ url: '/punishments?offset=1000000000', headers: (await signedIn(t, { clearance: 2 })).headers });
    expect(res.statusCode).toBe(200);
    expect(res.json().punishments).toEqual([]);
  });
});
