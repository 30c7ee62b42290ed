// Who is asking: the bot's API key, or a signed-in agent's session. Request context resolves it
// (src/platform/http/request-context.ts); the policies in this folder and the queries decide by it.
import type { AgentRow } from './agent-row.js';

export type Principal = { kind: 'key' } | { kind: 'session'; agent: AgentRow; allowlisted: boolean; token: string };
