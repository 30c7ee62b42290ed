// The local sign-in page: one form per fictional agent, no script. Names come from the demo
// database (a demo Director may rename anyone), so every value is escaped.
import { createHash } from 'node:crypto';
import { SIGN_IN_STATUSES } from '../platform/auth/agent-row.js';
import type { LocalSignInAgent } from './local-queries.js';

const STYLE = 'body{font:15px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem}li{margin:.4rem 0}button{font:inherit}';
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

function describe(agent: LocalSignInAgent): string {
  const parts = [agent.agent_rank ?? 'no rank', `clearance ${agent.clearance_level ?? 'none'}`, agent.status];
  if (agent.is_trainer) parts.push('trainer');
  if (agent.admin) parts.push('admin');
  return parts.join(', ');
}

function item(agent: LocalSignInAgent, returnTo: string | undefined): string {
  const name = escapeHtml(agent.name ?? agent.chat_id);
  const about = `${escapeHtml(describe(agent))} <small>(${agent.chat_id})</small>`;
  if (!SIGN_IN_STATUSES.includes(agent.status)) return `<li>${name}: ${about}; cannot sign in while ${escapeHtml(agent.status)}</li>`;
  const back = returnTo === undefined ? '' : `<input type="hidden" name="return_to" value="${escapeHtml(returnTo)}">`;
  return (
    `<li><form method="post" action="/auth/local"><input type="hidden" name="chat_id" value="${agent.chat_id}">${back}` +
    `<button type="submit">Sign in as ${name}</button> ${about}</form></li>`
  );
}

/** The page's HTML and the Content-Security-Policy that lets exactly its style and forms through. */
export function localSignInPage(agents: readonly LocalSignInAgent[], returnTo: string | undefined, formTargets: readonly string[]) {
  const list = agents.length === 0 ? '<p>The demo database holds no fictional agent: reset it with <code>npm run cli -- seed-demo</code>.</p>' : `<ul>${agents.map((a) => item(a, returnTo)).join('')}</ul>`;
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Demo sign-in</title>' +
    `<style>${STYLE}</style></head><body><h1>Demo sign-in</h1>` +
    '<p>The fictional agents of the demo environment. Signing in starts a real session as the agent chosen, ' +
    'exactly as the chat platform sign-in would; <code>POST /auth/logout</code> ends it. Demo only: production never offers this page.</p>' +
    `${list}</body></html>`;
  // form-action covers the redirect after the post too: this host, and the allowed return origins.
  const csp = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self' ${formTargets.join(' ')}; base-uri 'none'; frame-ancestors 'none'`;
  return { html, csp: csp.replace(/ ;/g, ';') };
}
