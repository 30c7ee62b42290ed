// The OAuth callback's code and state never reach a log line (issue 28): at level info Fastify logs
// every request's URL, and the error handler logs the URL of every error it answers; the values are replaced
// by [redacted], their names spelled plainly or percent-encoded.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { redactUrl } from '../src/platform/http/request-log.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { addAgent, browserSignIn, startFakeChatPlatform, type FakeChatPlatform } from './helpers/fake-chat-platform.js';
import { signInEnv } from './helpers/signin.js';

let fake: FakeChatPlatform;
let t: TestApp; // OAuth configured
let output = '';
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    output += chunk.toString();
    done();
  },
});

beforeAll(async () => {
  fake = await startFakeChatPlatform();
  const logger = pino({ level: 'info' }, sink);
  t = await createTestApp({ env: signInEnv(fake), logger });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  output = '';
  fake.reset();
});

const lines = () => output.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown> & { req?: { url: string }; url?: string });

describe('log lines at level info', () => {
  it('never carry the code or the state of a sign-in, successful or not', async () => {
    const id = '700000000000000901';
    await addAgent(t.db.production, id);
    fake.signInAs({ id, username: 'logged', global_name: null });
    const { back, callback, state } = await browserSignIn(t.app);
    expect(callback.statusCode).toBe(302);
    const code = back.searchParams.get('code')!;
    const sentState = back.searchParams.get('state')!;
    expect(code.length).toBeGreaterThan(10);
    // A replay, a forged callback with the names percent-encoded (Fastify decodes them), and one the
    // error handler answers (an unknown host: 421, logged at info with its URL).
    await t.app.inject({ url: back.pathname + back.search, headers: { cookie: `cms_oauth_state=${state.value}` } });
    await t.app.inject({ url: `/auth/chat/callback?%63ode=${code}&st%61te=${sentState}` });
    const failed = await t.app.inject({ url: `/auth/chat/callback?code=${code}&state=${sentState}&error_description=x`, headers: { host: 'elsewhere.example' } });
    expect(failed.statusCode).toBe(421);

    for (const secret of [code, sentState, encodeURIComponent(sentState), state.value]) expect(output).not.toContain(secret);
    // The lines are there, URLs and all, so the test cannot pass by logging nothing.
    const callbacks = lines().filter((line) => line.msg === 'incoming request' && line.req?.url.startsWith('/auth/chat/callback'));
    expect(callbacks.map((line) => line.req!.url)).toEqual([
      '/auth/chat/callback?state=[redacted]&code=[redacted]',
      '/auth/chat/callback?state=[redacted]&code=[redacted]',
      '/auth/chat/callback?%63ode=[redacted]&st%61te=[redacted]',
      '/auth/chat/callback?code=[redacted]&state=[redacted]&error_description=x',
    ]);
    expect(lines().find((line) => line.code === 'UNKNOWN_HOST')).toMatchObject({
      url: '/auth/chat/callback?code=[redacted]&state=[redacted]&error_description=x',
      status: 421,
    });
  });
});

describe('redactUrl', () => {
  it.each([
    ['/agents', '/agents'],
    ['/reports?limit=5&offset=0', '/reports?limit=5&offset=0'],
    ['/x?code=1&state=2', '/x?code=[redacted]&state=[redacted]'],
    ['/x?code&state=', '/x?code=[redacted]&state=[redacted]'],
    ['/x?CODE=1&codes=2&%zz=3', '/x?CODE=1&codes=2&%zz=3'],
    ['/x?sta%74e=2', '/x?sta%74e=[redacted]'],
  ])('%s -> %s', (url, redacted) => expect(redactUrl(url)).toBe(redacted));
});
