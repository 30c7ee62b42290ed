// A small real HTTP server speaking the parts of Discord's OAuth2 the sign-in uses: the authorize
// page (answers the redirect straight away, as for a user who already consented), the token
// endpoint (form-encoded, checks client credentials, code and redirect_uri), the user endpoint,
// and a proxy path that behaves like the token endpoint. It records what it received, and can be
// told how to answer the next token or user requests. Below it, the browser's side of the dance.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../src/platform/db/types.js';

export interface ChatUser {
  id: string;
  username: string;
  global_name: string | null;
}

/** How to answer one upcoming token (or user) request instead of normally. */
export type ScriptedReply =
  | { kind: 'rate-limit'; retryAfterHeader?: string; retryAfter: number }
  | { kind: 'server-error' }
  /** The redirect_uri refused: Discord's body (invalid_request) unless another error value is given. */
  | { kind: 'redirect-mismatch'; error?: 'invalid_request' | 'invalid_grant' }
  | { kind: 'invalid-grant' }
  | { kind: 'hang' };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  form: Record<string, string>;
  /** performance.now() when the request arrived. */
  at: number;
}

export const CLIENT_ID = '1180000000000000000';
export const CLIENT_SECRET = 'fake-client-secret-8d1f';
export const REDIRECT_URI = 'http://localhost/auth/chat/callback';
/** The callback URLs registered with the fake application: the configured one and the demo host's. */
export const REGISTERED_REDIRECT_URIS = new Set([REDIRECT_URI, 'http://demo.localhost/auth/chat/callback']);

export interface FakeChatPlatform {
  url: string;
  requests: RecordedRequest[];
  /** The user who "approves" at the authorize page; null makes the page deny (access_denied). */
  signInAs(user: ChatUser | null): void;
  /** Queue scripted answers for the next token-endpoint (or proxy) requests. */
  scriptToken(...replies: ScriptedReply[]): void;
  scriptUser(...replies: ScriptedReply[]): void;
  /** Requests that reached one path (e.g. '/api/oauth2/token'). */
  seen(path: string): RecordedRequest[];
  /** The env vars that point the service at this fake. */
  env(): Record<string, string>;
  reset(): void;
  close(): Promise<void>;
}

export const TOKEN_PATH = '/api/oauth2/token';
export const PROXY_PATH = '/proxy/api/oauth2/token';
export const USER_PATH = '/api/users/@me';

export async function startFakeChatPlatform(): Promise<FakeChatPlatform> {
  const requests: RecordedRequest[] = [];
  const codes = new Map<string, { user: ChatUser; redirectUri: string }>();
  const tokens = new Map<string, ChatUser>();
  let tokenScript: ScriptedReply[] = [];
  let userScript: ScriptedReply[] = [];
  let approver: ChatUser | null = null;
  const hanging = new Set<ServerResponse>();

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };

  // Answers a scripted reply; returns false when the request should be handled normally.
  const scripted = (res: ServerResponse, reply: ScriptedReply | undefined): boolean => {
    if (reply === undefined) return false;
    switch (reply.kind) {
      case 'rate-limit':
        json(res, 429, { message: 'You are being rate limited.', retry_after: reply.retryAfter, global: false },
          reply.retryAfterHeader === undefined ? {} : { 'retry-after': reply.retryAfterHeader });
        break;
      case 'server-error':
        json(res, 500, { message: '500: Internal Server Error', code: 0 });
        break;
      case 'redirect-mismatch':
        json(res, 400, { error: reply.error ?? 'invalid_request', error_description: 'Invalid "redirect_uri" in request.' });
        break;
      case 'invalid-grant':
        json(res, 400, { error: 'invalid_grant', error_description: 'Invalid "code" in request.' });
        break;
      case 'hang':
        hanging.add(res);
        break;
    }
    return true;
  };

  const token = (res: ServerResponse, req: IncomingMessage, form: Record<string, string>) => {
    if (scripted(res, tokenScript.shift())) return;
    if (!req.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) {
      return json(res, 400, { error: 'unsupported_grant_type' });
    }
    if (form.client_id !== CLIENT_ID || form.client_secret !== CLIENT_SECRET) return json(res, 401, { error: 'invalid_client' });
    if (form.grant_type !== 'authorization_code') return json(res, 400, { error: 'unsupported_grant_type' });
    const issued = codes.get(form.code ?? '');
    if (issued === undefined) return json(res, 400, { error: 'invalid_grant', error_description: 'Invalid "code" in request.' });
    const user = issued.user;
    // As on the real platform (discord/discord-api-docs#4076): a registered URL, and the very one
    // the code was issued for; refused as invalid_request.
    if (!REGISTERED_REDIRECT_URIS.has(form.redirect_uri ?? '') || form.redirect_uri !== issued.redirectUri) {
      return json(res, 400, { error: 'invalid_request', error_description: 'Invalid "redirect_uri" in request.' });
    }
    codes.delete(form.code!); // codes are single use, as on the real platform
    const accessToken = randomBytes(15).toString('base64url');
    tokens.set(accessToken, user);
    json(res, 200, { token_type: 'Bearer', access_token: accessToken, expires_in: 604800, refresh_token: 'refresh', scope: 'identify' });
  };

  const me = (res: ServerResponse, req: IncomingMessage) => {
    if (scripted(res, userScript.shift())) return;
    const user = tokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (user === undefined) return json(res, 401, { message: '401: Unauthorized', code: 0 });
    json(res, 200, { ...user, avatar: null, discriminator: '0' });
  };

  const server = createServer((req, res) => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      requests.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers, form, at });
      if (req.method === 'GET' && url.pathname === '/oauth2/authorize') {
        const back = new URL(url.searchParams.get('redirect_uri') ?? REDIRECT_URI);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        if (approver === null) {
          back.searchParams.set('error', 'access_denied');
          back.searchParams.set('error_description', 'The resource owner or authorization server denied the request');
        } else {
          const code = randomBytes(15).toString('base64url');
          codes.set(code, { user: approver, redirectUri: url.searchParams.get('redirect_uri') ?? '' });
          back.searchParams.set('code', code);
        }
        return res.writeHead(302, { location: back.toString() }).end();
      }
      if (req.method === 'POST' && (url.pathname === TOKEN_PATH || url.pathname === PROXY_PATH)) return token(res, req, form);
      if (req.method === 'GET' && url.pathname === USER_PATH) return me(res, req);
      json(res, 404, { message: '404: Not Found', code: 0 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    requests,
    signInAs: (user) => void (approver = user),
    scriptToken: (...replies) => void tokenScript.push(...replies),
    scriptUser: (...replies) => void userScript.push(...replies),
    seen: (path) => requests.filter((r) => r.path === path),
    env: () => ({
      CHAT_OAUTH_CLIENT_ID: CLIENT_ID,
      CHAT_OAUTH_CLIENT_SECRET: CLIENT_SECRET,
      CHAT_OAUTH_REDIRECT_URI: REDIRECT_URI,
      CHAT_OAUTH_AUTHORIZE_URL: `${base}/oauth2/authorize`,
      CHAT_OAUTH_TOKEN_URL: `${base}${TOKEN_PATH}`,
      CHAT_API_USER_URL: `${base}${USER_PATH}`,
    }),
    reset() {
      requests.length = 0;
      tokenScript = [];
      userScript = [];
      approver = null;
      for (const res of hanging) res.destroy();
      hanging.clear();
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An agent row, written straight into the store (status decides whether it may sign in). */
export async function addAgent(db: Db, chatId: string, status = 'active'): Promise<void> {
  await db.query(
    `insert into agents (chat_id, name, status, agent_rank, clearance_level, is_trainer)
     values ($1::text, $2::text, $3::text, 'Agent', 2, false)
     on conflict (chat_id) do update set status = excluded.status`,
    [chatId, `Agent ${chatId.slice(-4)}`, status],
  );
}

export interface SignInOptions {
  host?: string;
  /** Login query string, with its leading '?'. */
  query?: string;
  headers?: Record<string, string>;
  /** Cookies the browser already holds, sent with the callback beside the state cookie. */
  cookie?: string;
}

/** login -> the fake's authorize page (real HTTP) -> the callback, carrying the state cookie. */
export async function browserSignIn(app: FastifyInstance, { host = 'localhost', query = '', headers = {}, cookie }: SignInOptions = {}) {
  const login = await app.inject({ url: `/auth/chat/login${query}`, headers: { host, ...headers } });
  if (login.statusCode !== 302) throw new Error(`login answered ${login.statusCode}: ${login.body}`);
  const state = login.cookies.find((c) => c.name === 'cms_oauth_state')!;
  const authorize = await fetch(login.headers.location!, { redirect: 'manual' });
  const back = new URL(authorize.headers.get('location')!);
  const cookies = [`cms_oauth_state=${state.value}`, ...(cookie ? [cookie] : [])].join('; ');
  const callback = await app.inject({ url: back.pathname + back.search, headers: { host, cookie: cookies, ...headers } });
  return { login, state, back, callback, cookies };
}

/** Runs a popup page's inline script against a stand-in window: what it posted, whether it closed. */
export function runPopupPage(html: string) {
  const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1] ?? '';
  const posted: unknown[][] = [];
  let closed = false;
  const window = { opener: { postMessage: (...args: unknown[]) => posted.push(args) }, close: () => (closed = true) };
  runInNewContext(script, { window });
  return { posted, closed, scriptHash: createHash('sha256').update(script).digest('base64') };
}
