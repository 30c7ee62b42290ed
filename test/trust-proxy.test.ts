// TRUST_PROXY (issue 38, finding 8): `true` believes the left-most X-Forwarded-For, which a client
// writes itself; the proxies' addresses (or CIDRs) believe only what those proxies appended, the
// safe setting the README names. A hop count is not taken: Fastify trusts nothing for one, since
// it cannot tell a proxy from a client that reaches the service directly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { createTestApp, type TestApp } from './helpers/app.js';

const apps: Record<string, TestApp> = {};
beforeAll(async () => {
  for (const trust of ['true', '127.0.0.1', 'false']) {
    apps[trust] = await createTestApp({
      env: { TRUST_PROXY: trust },
      extend: (api) => {
        api.get('/whoami', { config: { auth: 'none' }, schema: { hide: true } }, async (request) => ({ ip: request.ip, protocol: request.protocol }));
      },
    });
  }
});
afterAll(async () => {
  for (const t of Object.values(apps)) await t.close();
});

const whoami = (trust: string, headers: Record<string, string>) => apps[trust]!.app.inject({ url: '/whoami', headers }).then((r) => r.json());

describe('TRUST_PROXY', () => {
  it("the proxy's address takes the address the proxy appended, not one the client wrote; true believes the client", async () => {
    const forged = { 'x-forwarded-for': '203.0.113.9, 198.51.100.7', 'x-forwarded-proto': 'https' };
    expect(await whoami('127.0.0.1', forged)).toEqual({ ip: '198.51.100.7', protocol: 'https' });
    expect(await whoami('true', forged)).toEqual({ ip: '203.0.113.9', protocol: 'https' });
    expect(await whoami('false', forged)).toEqual({ ip: '127.0.0.1', protocol: 'http' });
  });

  it('a hop count is refused at boot, naming the forms it takes', () => {
    expect(() => parseConfig({ TRUST_PROXY: '1' })).toThrow('TRUST_PROXY: expected true, false, or a list of proxy addresses/CIDRs');
  });
});
