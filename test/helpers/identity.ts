// Agents and signed-in browsers for tests, written straight into the store under test.
import { insertAgent, type AgentRow, type NewAgent } from '../../src/agents/queries.js';
import type { EnvironmentName } from '../../src/config.js';
import { createSession, SESSION_COOKIE } from '../../src/platform/auth/sessions.js';
import type { Rank } from '../../src/platform/auth/permissions.js';
import type { TestApp } from './app.js';

let next = 0;
/** A fresh fictional 18-digit chat id. */
export const chatId = () => String(200000000000000000n + BigInt(process.pid) * 1000n + BigInt(++next));

export interface Person {
  agent: AgentRow;
  cookie: string;
  headers: { cookie: string; host: string };
}

export interface PersonOptions extends Partial<NewAgent> {
  rank?: Rank | null;
  clearance?: number | null;
  env?: EnvironmentName;
  allowlisted?: boolean;
}

/** An agent with a live session; `headers` sign requests in as them (on their environment's host). */
export async function signedIn(t: TestApp, options: PersonOptions = {}): Promise<Person> {
  const env = options.env ?? 'production';
  const db = t.db[env];
  const agent = (await insertAgent(db, {
    chat_id: options.chat_id ?? chatId(),
    name: options.name ?? `Agent ${next}`,
    status: options.status ?? 'active',
    agent_rank: options.rank === undefined ? 'Agent' : options.rank,
    clearance_level: options.clearance === undefined ? 2 : options.clearance,
    is_trainer: options.is_trainer ?? false,
  }))!;
  if (options.allowlisted) await db.query('insert into admin_allowlist (chat_id, active) values ($1::text, true)', [agent.chat_id]);
  const { token } = await createSession(db, env, agent.chat_id);
  const cookie = `${SESSION_COOKIE}=${token}`;
  return { agent, cookie, headers: { cookie, host: env === 'demo' ? 'demo.localhost' : 'localhost' } };
}
