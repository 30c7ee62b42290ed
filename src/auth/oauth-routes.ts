// Chat-platform sign-in (spec: Authentication and session). /auth/chat/login mints a state bound
// to the environment and to this browser, and sends the browser to the platform; the callback
// checks that state, exchanges the code, resolves the agent and starts a fresh session. Every
// sign-in failure goes back to the dashboard login as ?error=<code> (or to the popup's opener).
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { findAgent, SIGN_IN_STATUSES, type AgentRow } from '../agents/queries.js';
import type { Config } from '../config.js';
import { signingKey } from '../platform/auth/signing-keys.js';
import { hashToken, StateAlreadyUsed, tokenEnvironment } from '../platform/auth/sessions.js';
import type { Environment } from '../platform/environments.js';
import { errors } from '../platform/errors.js';
import { errorResponses } from '../platform/http/schemas.js';
import { ChatSignInError, demoAgentFor, exchangeCode, fetchChatUserId, type ChatFailureCode } from './chat-client.js';
import { stateStartedSession } from './oauth-queries.js';
import { OAUTH_STATE_TTL_SECONDS, openState, sealState, type OAuthAttempt } from './oauth-state.js';
import { CallbackQuery, LoginQuery, PopupPage, RedirectResponse } from './oauth-schemas.js';
import { allowedReturnTo, cookieBase, signInRateLimit, startSession } from './sign-in.js';

export { demoAgentFor } from './chat-client.js';

export const STATE_COOKIE = 'cms_oauth_state';
const STATE_COOKIE_PATH = '/auth/chat';
const MAX_RETURN_TO = 2048;

export type SignInFailureCode =
  | ChatFailureCode
  | 'chat_authorization_denied'
  | 'oauth_state_mismatch'
  | 'not_a_svc_agent'
  | 'agent_not_active'
  | 'demo_not_authorized';

class SignInFailed extends Error {
  constructor(
    readonly code: SignInFailureCode,
    detail: string,
  ) {
    super(detail);
  }
}

export interface OAuthRoutesOptions {
  config: Config;
}

export const oauthRoutes: FastifyPluginAsyncTypebox<OAuthRoutesOptions> = async (app, { config }) => {
  const returnOrigins = new Set([...config.dashboardOrigins, ...config.trainingOrigins]);
  const homeOrigin = config.dashboardOrigins[0] ?? config.trainingOrigins[0];

  app.get(
    '/auth/chat/login',
    {
      config: { auth: 'none', rateLimit: signInRateLimit(config) },
      schema: {
        tags: ['Authentication'],
        operationId: 'signInWithChat',
        summary: 'Start chat-platform sign-in: redirects the browser to the OAuth page',
        querystring: LoginQuery,
        response: { 302: RedirectResponse, ...errorResponses(400, 421, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const oauth = config.chatOAuth;
      if (oauth === undefined) throw errors.notConfigured('Chat sign-in');
      const returnTo = request.query.return_to === undefined ? null : allowedReturnTo(request.query.return_to, returnOrigins);
      // It rides in the state cookie, and browsers drop a cookie over 4 KB: 2,048 characters as sent on.
      if (returnTo !== null && returnTo.length > MAX_RETURN_TO) throw errors.validation(`querystring.return_to must be at most ${MAX_RETURN_TO} characters once URL-encoded`);
      const { name, db } = request.environment;
      // The environment prefix lets the callback refuse a state minted by the other environment.
      const state = `${name}.${randomBytes(32).toString('base64url')}`;
      // Nothing is written: the attempt travels in the browser's cookie, signed (oauth-state.ts).
      const sealed = sealState(await signingKey(db, 'oauth_state'), name, state, { returnTo, popup: request.query.popup === '1' });
      reply.setCookie(STATE_COOKIE, sealed, { ...cookieBase(request), path: STATE_COOKIE_PATH, maxAge: OAUTH_STATE_TTL_SECONDS });
      const authorize = new URL(oauth.authorizeUrl);
      const params = { response_type: 'code', client_id: oauth.clientId, scope: 'identify', redirect_uri: redirectUriFor(request), state, prompt: 'none' };
      for (const [key, value] of Object.entries(params)) authorize.searchParams.set(key, value);
      return reply.header('cache-control', 'no-store').redirect(authorize.toString(), 302);
    },
  );

  app.get(
    '/auth/chat/callback',
    {
      config: { auth: 'none', rateLimit: signInRateLimit(config) },
      // A malformed query is a failed sign-in (a redirect), not a JSON 400.
      attachValidation: true,
      schema: {
        tags: ['Authentication'],
        operationId: 'completeChatSignIn',
        summary: 'OAuth redirect target: checks the state, signs the agent in, redirects to the dashboard',
        description:
          'Failures redirect to the dashboard login with ?error=<code>: chat_authorization_denied, oauth_state_mismatch, ' +
          'chat_redirect_uri_mismatch, chat_token_exchange_failed, chat_user_fetch_failed, not_a_svc_agent, ' +
          'agent_not_active, demo_not_authorized.',
        querystring: CallbackQuery,
        response: { 200: PopupPage, 302: RedirectResponse, ...errorResponses(400, 421, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const oauth = config.chatOAuth;
      if (oauth === undefined) throw errors.notConfigured('Chat sign-in');
      reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
      const query: CallbackQuery = request.validationError ? {} : request.query;
      let attempt: OAuthAttempt | undefined;
      try {
        const checked = await checkState(request, query.state);
        attempt = checked.attempt;
        // Used up in this browser; a callback that fails the check leaves the real attempt's cookie alone.
        if (attempt !== undefined) reply.clearCookie(STATE_COOKIE, { ...cookieBase(request), path: STATE_COOKIE_PATH });
        if (query.error !== undefined) throw new SignInFailed('chat_authorization_denied', `chat platform answered ${query.error}`);
        if (checked.attempt === undefined) throw new SignInFailed('oauth_state_mismatch', checked.reason);
        if (!query.code) throw new SignInFailed('chat_token_exchange_failed', 'no code in the callback');
        const accessToken = await exchangeCode({ ...oauth, redirectUri: redirectUriFor(request) }, query.code);
        const chatId = await fetchChatUserId(oauth, accessToken);
        const agent = await signInAgent(request.environment, chatId);
        await startSession(request, reply, agent.chat_id, hashToken(query.state!));
        request.log.info({ chat_id: agent.chat_id }, 'chat sign-in succeeded');
        return succeed(reply, checked.attempt);
      } catch (caught) {
        // Two callbacks with one state racing past the check: the session's unique state hash lets one through.
        const err = caught instanceof StateAlreadyUsed ? new SignInFailed('oauth_state_mismatch', caught.message) : caught;
        if (!(err instanceof SignInFailed || err instanceof ChatSignInError)) throw err;
        request.log.info({ code: err.code, detail: err.message }, 'chat sign-in failed');
        return fail(reply, err.code, attempt);
      }
    },
  );

  /**
   * Each environment's sign-in comes back to its own host, where its state and session live:
   * CHAT_OAUTH_REDIRECT_URI when its host belongs to this environment, else the same callback on
   * the host this sign-in runs on (register both URLs with the chat platform).
   */
  function redirectUriFor(request: FastifyRequest): string {
    const configured = new URL(config.chatOAuth!.redirectUri);
    if (config.environments[request.environment.name].hosts.includes(configured.hostname.toLowerCase())) return configured.toString();
    configured.protocol = `${request.protocol}:`;
    configured.host = request.host;
    return configured.toString();
  }

  /**
   * The attempt behind a state that matches this browser's signed cookie and this environment,
   * and has not started a session yet (single use without a row per attempt: oauth-queries.ts).
   */
  async function checkState(request: FastifyRequest, state: string | undefined): Promise<{ attempt?: OAuthAttempt; reason: string }> {
    const cookie = request.cookies[STATE_COOKIE];
    const { name, db } = request.environment;
    if (!state) return { reason: 'no state in the callback' };
    if (!cookie) return { reason: 'no state cookie: another browser, or the attempt expired' };
    const opened = openState(await signingKey(db, 'oauth_state'), name, cookie, state);
    if ('refused' in opened) return { reason: opened.refused };
    if (tokenEnvironment(state) !== name) return { reason: 'state minted by another environment' };
    if (await stateStartedSession(db, hashToken(state))) return { reason: 'state already used' };
    return { attempt: opened.attempt, reason: 'ok' };
  }

  async function signInAgent(environment: Environment, chatId: string): Promise<AgentRow> {
    let agentChatId = chatId;
    if (environment.name === 'demo') {
      const demoAgent = demoAgentFor(chatId, config.demoAllowedChatIds);
      if (demoAgent === undefined) throw new SignInFailed('demo_not_authorized', `chat id ${chatId} is not allowed into the demo`);
      agentChatId = demoAgent;
    }
    const agent = await findAgent(environment.db, agentChatId);
    if (agent === undefined) throw new SignInFailed('not_a_svc_agent', `no agent with chat id ${agentChatId}`);
    if (!SIGN_IN_STATUSES.includes(agent.status)) throw new SignInFailed('agent_not_active', `agent ${agentChatId} is ${agent.status}`);
    return agent;
  }

  function succeed(reply: FastifyReply, attempt: OAuthAttempt) {
    const returnOrigin = attempt.returnTo === null ? homeOrigin : new URL(attempt.returnTo).origin;
    if (attempt.popup && returnOrigin !== undefined) return popupPage(reply, { type: 'chat-auth', success: true }, returnOrigin);
    const target = attempt.returnTo ?? (homeOrigin === undefined ? undefined : `${homeOrigin}/`);
    if (target !== undefined) return reply.redirect(target, 302);
    return reply.type('text/plain; charset=utf-8').send('Signed in. You can close this window.');
  }

  function fail(reply: FastifyReply, code: SignInFailureCode, attempt: OAuthAttempt | undefined) {
    // Popup mode is known only from a verified state: a forged callback never gets a popup page.
    const returnOrigin = attempt?.returnTo ? new URL(attempt.returnTo).origin : homeOrigin;
    if (attempt?.popup && returnOrigin !== undefined) {
      return popupPage(reply, { type: 'chat-auth', success: false, error: code }, returnOrigin);
    }
    if (config.dashboardLoginUrl === undefined) throw errors.validation(`Chat sign-in failed: ${code}`);
    const login = new URL(config.dashboardLoginUrl);
    login.searchParams.set('error', code);
    return reply.redirect(login.toString(), 302);
  }
};

/** JSON made safe inside <script>: no `</script>`, no HTML comment, no JS line separators. */
function scriptValue(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** The popup's answer: post the outcome to the opener (that origin only), then close. */
function popupPage(reply: FastifyReply, message: { type: 'chat-auth'; success: boolean; error?: string }, targetOrigin: string) {
  const script =
    `(function(){var message=${scriptValue(message)};var origin=${scriptValue(targetOrigin)};` +
    'try{if(window.opener){window.opener.postMessage(message,origin);}}finally{window.close();}})();';
  const hash = createHash('sha256').update(script).digest('base64');
  const text = message.success ? 'Signed in. You can close this window.' : 'Sign-in failed. You can close this window.';
  return reply
    .header('content-security-policy', `default-src 'none'; script-src 'sha256-${hash}'; base-uri 'none'; frame-ancestors 'none'`)
    .type('text/html; charset=utf-8')
    .send(`<!doctype html><html><head><meta charset="utf-8"><title>Sign-in</title></head><body><p>${text}</p><script>${script}</script></body></html>`);
}
