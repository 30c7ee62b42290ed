// TRUST_PROXY (issue 38, finding 8): `true` believes the left-most X-Forwarded-For, which a client
// writes itself; a hop count (the proxies in front, as Fastify takes it) or the proxies' addresses
// believe only what those proxies appended. The address decides the sign-in limit and the realtime
// caps; the protocol decides the session cookie's Secure flag.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { parseConfig } from '../src/config.js';

const apps: Record<string, TestApp> = {};
beforeAll(async () => {
  for (const trust of ['true', '1', '127.0.0.1', 'false']) {
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
  it('parses true, false, a hop count and a list of addresses or CIDRs; anything else stops the boot naming it', () => {
    expect(parseConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(parseConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(parseConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.4' }).trustProxy).toEqual(['10.0.0.0/8', '192.168.1.4']);
    expect(() => parseConfig({ TRUST_PROXY: '0' })).toThrow('TRUST_PROXY: expected true, false, a hop count from 1 to 100, or a list of proxy addresses/CIDRs');
  });

  it('a hop count or the proxy\'s address takes the address the proxy appended, not one the client wrote', async () => {
    const forged = { 'x-forwarded-for': '203.0.113.9, 198.51.100.7', 'x-forwarded-proto': 'https' };
    expect(await whoami('true', forged)).toEqual({ ip: '203.0.113.9', protocol: 'https' });
    expect(await whoami('1', forged)).toEqual({ ip: '198.51.100.7', protocol: 'https' });
    expect(await whoami('127.0.0.1', forged)).toEqual({ ip: '198.51.100.7', protocol: 'https' });
    expect(await whoami('false', forged)).toEqual({ ip: '127.0.0.1', protocol: 'http' });
  });
});
