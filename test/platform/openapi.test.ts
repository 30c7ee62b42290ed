// The API reference is generated from the route schemas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('API reference', () => {
  it('serves the OpenAPI document built from the route schemas at /openapi.json', async () => {
    const res = await t.app.inject({ url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    for (const kind of ['agreement', 'agent', 'join', 'case', 'investigation', 'clearance']) {
      expect(doc.paths[`/generate/${kind}`].get.security).toEqual([{ apiKey: [] }]);
    }
    const timestamp = doc.paths['/util/timestamp'].post;
    expect(timestamp.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['date'],
      additionalProperties: false,
    });
    expect(Object.keys(timestamp.responses)).toEqual(expect.arrayContaining(['200', '400', '401']));
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorization' });
    expect(doc.paths['/']).toBeUndefined();
  });

  it('serves the interactive reference at /docs', async () => {
    const res = await t.app.inject({ url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('swagger-ui');
  });

  it('is not served to an unknown host', async () => {
    const res = await t.app.inject({ url: '/openapi.json', headers: { host: 'evil.example.com' } });
    expect(res.statusCode).toBe(421);
  });
});
