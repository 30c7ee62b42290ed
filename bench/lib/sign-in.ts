// Signs a new agent in through the service's public API: the bot creates and activates the agent,
// then the browser side walks /auth/chat/login and /auth/chat/callback against the fake platform.
import { admin } from './pg.js';
import { API_KEY } from './service.js';

export interface SignInOptions {
  chatId: string;
  clearance: number;
  rank?: string;
}

async function call(url: string, init: RequestInit): Promise<Response> {
  const res = await fetch(url, { redirect: 'manual', ...init });
  if (res.status >= 400) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  return res;
}

const cookieOf = (res: Response, name: string) =>
  res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`))?.split(';')[0];

/** Returns the `cms_session=…` cookie of a fresh session. */
export async function signIn(serviceUrl: string, options: SignInOptions): Promise<string> {
  const json = { authorization: API_KEY, 'content-type': 'application/json' };
  await call(`${serviceUrl}/agents/create`, { method: 'POST', headers: json, body: JSON.stringify({ chat_id: options.chatId, name: 'Bench Agent' }) });
  await call(`${serviceUrl}/agents/${options.chatId}/update`, {
    method: 'PATCH',
    headers: json,
    body: JSON.stringify({ status: 'active', clearance_level: options.clearance }),
  });
  return browserSignIn(serviceUrl, options.chatId);
}

/** The browser half alone, for an agent that already exists and may sign in (e.g. bootstrapped in SQL). */
export async function browserSignIn(serviceUrl: string, chatId: string): Promise<string> {
  const login = await call(`${serviceUrl}/auth/chat/login`, {});
  const state = new URL(login.headers.get('location')!).searchParams.get('state')!;
  const stateCookie = cookieOf(login, 'cms_oauth_state')!;
  const callback = await call(`${serviceUrl}/auth/chat/callback?code=${chatId}&state=${encodeURIComponent(state)}`, {
    headers: { cookie: stateCookie },
  });
  const session = cookieOf(callback, 'cms_session');
  if (!session) throw new Error(`sign-in failed: ${callback.status} ${callback.headers.get('location')}`);
  return session;
}

/**
 * An active agent of `rank` and `clearance` written straight into the service's database (kept
 * databases keep their agents between runs, where the bot's create would refuse the second time),
 * then signed in. Returns the `cms_session=…` cookie.
 */
export async function signInAs(serviceUrl: string, databaseUrl: string, options: Required<SignInOptions> & { name: string }): Promise<string> {
  await admin(databaseUrl, (c) =>
    c.query(
      `insert into agents (chat_id, name, status, agent_rank, clearance_level) values ($1::text, $2::text, 'active', $3::text, $4::smallint)
       on conflict (chat_id) do update set name = excluded.name, status = 'active', agent_rank = excluded.agent_rank, clearance_level = excluded.clearance_level`,
      [options.chatId, options.name, options.rank, options.clearance],
    ),
  );
  return browserSignIn(serviceUrl, options.chatId);
}
