// Realtime for the training front end (spec: Training center, Authentication 9; issue 12): the
// client's configuration, its token, and the built-in hub's WebSocket at the path Supabase's
// client opens (`<backend_url>/realtime/v1/websocket?apikey=…&vsn=…`).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sessionAgent } from '../platform/auth/guards.js';
import { AppError, errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses, timestamp } from '../platform/http/schemas.js';
import type { ConnectionCaps } from './caps.js';
import type { RealtimeHub } from './hub.js';
import { VERSIONS, type Version } from './protocol.js';
import { anonKey, mintToken, TOKEN_LIFETIME_SECONDS } from './tokens.js';

const tags = ['Training center'];
export const TOKEN_PATH = '/training/realtime-token';
export const SOCKET_PATH = '/realtime/v1/websocket';

const RealtimeConfig = Type.Object({
  success: Type.Literal(true),
  backend_url: Type.String({ description: 'Give it to createClient(backend_url, anon_key): this service (its own hub) or the configured Supabase project' }),
  anon_key: Type.String({ description: 'Public. The built-in hub’s own is a JWT with role anon (it reads no channel), or <ENV>_REALTIME_ANON_KEY' }),
  token_path: Type.String({ description: 'Where the client’s accessToken callback fetches its JWT' }),
});
const RealtimeToken = Type.Object({
  success: Type.Literal(true),
  token: Type.String({ description: 'HS256 JWT: role authenticated, sub the chat id' }),
  ttl: Type.Integer({ description: `Seconds; ${TOKEN_LIFETIME_SECONDS} by default` }),
  expires_at: timestamp(),
});
const SocketQuery = Type.Object({
  vsn: Type.Optional(Type.String({ description: 'Serializer: 1.0.0 (JSON objects, the default) or 2.0.0 (arrays and binary broadcasts)' })),
  apikey: Type.Optional(Type.String()),
  log_level: Type.Optional(Type.String()),
});

function signingSecret(request: FastifyRequest): string {
  const secret = request.environment.config.realtimeSigningSecret;
  if (!secret) throw errors.notConfigured('Realtime');
  return secret;
}

export const realtimeRoutes: FastifyPluginAsyncTypebox<{ hub: RealtimeHub; caps: ConnectionCaps }> = async (app, { hub, caps }) => {
  app.get(
    '/training/realtime-config',
    { config: { auth: 'session' }, schema: { tags, operationId: 'getRealtimeConfig', summary: 'The browser realtime client’s public configuration', response: { 200: RealtimeConfig, ...errorResponses(...COMMON_ERRORS) } } },
    async (request) => {
      sessionAgent(request);
      const secret = signingSecret(request);
      const { realtimeUrl, realtimeAnonKey, name } = request.environment.config;
      // The built-in hub is this service at the host the request came to: each environment's own.
      const backend = realtimeUrl ?? `${request.protocol}://${request.host}`;
      return { success: true as const, backend_url: backend.replace(/\/$/, ''), anon_key: realtimeAnonKey ?? (await anonKey(name, secret)), token_path: TOKEN_PATH };
    },
  );

  app.get(
    TOKEN_PATH,
    { config: { auth: 'session' }, schema: { tags, operationId: 'getRealtimeToken', summary: 'A signed realtime token for the signed-in agent (503 when realtime is not configured)', response: { 200: RealtimeToken, ...errorResponses(...COMMON_ERRORS) } } },
    async (request) => {
      const agent = sessionAgent(request);
      const token = await mintToken(request.environment.name, signingSecret(request), agent.chat_id);
      return { success: true as const, ...token };
    },
  );

  app.route({
    method: 'GET',
    url: SOCKET_PATH,
    config: { auth: 'none' },
    schema: {
      tags,
      summary: 'The built-in realtime hub (WebSocket, Supabase Realtime protocol); private training channels only',
      querystring: SocketQuery,
      hide: true,
    },
    // Refused before the upgrade, with an HTTP answer the client logs.
    preHandler: async (request) => {
      signingSecret(request);
      const vsn = (request.query as { vsn?: string }).vsn ?? '1.0.0';
      if (!(VERSIONS as readonly string[]).includes(vsn)) throw errors.validation(`querystring.vsn must be one of: ${VERSIONS.join(', ')}`);
      // Last, so that only an upgrade about to happen takes a slot (released when its socket closes).
      if (request.ws) {
        const refusal = caps.admit(request.ip, request.raw.socket);
        if (refusal) throw refusal;
      }
    },
    // A plain HTTP request, without the upgrade: answered in the envelope (the plugin's default is an empty 404).
    handler: async () => {
      throw new AppError(426, `${SOCKET_PATH} speaks WebSocket: send the request with Upgrade: websocket`, 'UPGRADE_REQUIRED');
    },
    wsHandler: (socket, request) => {
      const { vsn, apikey } = request.query as { vsn?: string; apikey?: string };
      hub.accept(socket, request.environment.name, (vsn ?? '1.0.0') as Version, apikey);
    },
  });
};
