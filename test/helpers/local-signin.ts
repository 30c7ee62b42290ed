// The demo's local sign-in (DEMO_LOCAL_SIGNIN) as a browser drives it: the form post, and the
// session cookie it leaves; shared by test/auth-local-signin*.test.ts.
import type { FastifyInstance } from 'fastify';
import { SESSION_COOKIE } from '../../src/platform/auth/sessions.js';
import type { Db } from '../../src/platform/db/types.js';

export const DEMO_HOST = 'demo.localhost';
/** The fictional personas (src/demo/seed.ts), and two seeded agents who may not sign in. */
export const DIRECTOR = '100000000000000001';
export const AGENT = '100000000000000003';
export const SUSPENDED = '745529016683307129';
export const INACTIVE = '903358127741602996';

export interface LocalPost {
  chat_id: string;
  return_to?: string;
}

/** POST /auth/local as the page's form sends it (form-encoded), or as JSON. */
export function postLocal(
  app: FastifyInstance,
  body: LocalPost | Record<string, string>,
  { host = DEMO_HOST, headers = {}, json = false }: { host?: string; headers?: Record<string, string>; json?: boolean } = {},
) {
  const payload = json ? JSON.stringify(body) : new URLSearchParams(body as Record<string, string>).toString();
  const type = json ? 'application/json' : 'application/x-www-form-urlencoded';
  return app.inject({ method: 'POST', url: '/auth/local', headers: { host, 'content-type': type, ...headers }, payload });
}

/** The session cookie a response set, as the browser sends it back. */
export function sessionCookieOf(res: { cookies: { name: string; value: string }[] }): string {
  const cookie = res.cookies.find((c) => c.name === SESSION_COOKIE);
  if (cookie === undefined) throw new Error('no session cookie set');
  return `${SESSION_COOKIE}=${cookie.value}`;
}

export const tokenOf = (cookie: string) => cookie.slice(SESSION_COOKIE.length + 1);

/** Every column of the sessions rows of one agent. */
export async function sessionRows(db: Db, chatId: string) {
  return (await db.query<Record<string, unknown>>('select * from sessions where chat_id = $1::text order by created_at', [chatId])).rows;
}

export async function sessionCount(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from sessions');
  return rows[0]!.n;
}
