// A minimal stand-in for the chat platform's OAuth endpoints, so the bench signs in through the
// service's real flow. The authorization code is the chat id to sign in as; the access token too.
import { createServer, type Server } from 'node:http';
import { onCleanup } from './cleanup.js';

export interface FakeChat {
  url: string;
  env: Record<string, string>;
}

export async function startFakeChat(): Promise<FakeChat> {
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && req.url === '/api/oauth2/token') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const code = new URLSearchParams(body).get('code') ?? '';
        send(200, { access_token: code, token_type: 'Bearer', expires_in: 604800, scope: 'identify' });
      });
      return;
    }
    if (req.method === 'GET' && req.url === '/api/users/@me') {
      const id = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      return send(200, { id, username: `bench${id.slice(-4)}`, global_name: 'Bench Agent', avatar: null, discriminator: '0' });
    }
    send(404, { message: '404: Not Found', code: 0 });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    env: {
      CHAT_OAUTH_CLIENT_ID: 'bench-client',
      CHAT_OAUTH_CLIENT_SECRET: 'bench-secret',
      CHAT_OAUTH_REDIRECT_URI: 'http://localhost/auth/chat/callback',
      CHAT_OAUTH_AUTHORIZE_URL: `${url}/oauth2/authorize`,
      CHAT_OAUTH_TOKEN_URL: `${url}/api/oauth2/token`,
      CHAT_API_USER_URL: `${url}/api/users/@me`,
      DASHBOARD_ORIGINS: 'http://dashboard.bench.localhost',
    },
  };
}

let shared: Promise<FakeChat> | undefined;

/** One stand-in for the whole run: it keeps no state, so every service of the run may share it. */
export const sharedFakeChat = (): Promise<FakeChat> => (shared ??= startFakeChat());
