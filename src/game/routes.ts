// The bot asks whether a player is in the game server now, and where (spec: Game server lookup).
// Key only. The player list comes through the relays (players.ts); this route finds the player in it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../platform/errors.js';
import { COMMON_ERRORS, errorResponses } from '../platform/http/schemas.js';
import type { GameServer } from './players.js';
import { GamePlayer, GamePlayerParams } from './schemas.js';

export const gameRoutes: FastifyPluginAsyncTypebox<{ game: GameServer | undefined }> = async (app, { game }) => {
  app.get(
    '/game/player/:game_user_id',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['Game server'],
        operationId: 'getGamePlayer',
        summary: 'Whether a player is in the game server now, and where',
        description:
          'Relays are tried in order with failover and a circuit breaker each; one upstream call serves every lookup for a few seconds. 429 carries Retry-After.',
        params: GamePlayerParams,
        response: { 200: GamePlayer, ...errorResponses(400, 429, 502, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const id = Number(request.params.game_user_id);
      if (!Number.isSafeInteger(id)) throw errors.validation('params.game_user_id must be a positive integer up to 2^53 - 1');
      if (!game) throw errors.notConfigured('The game server lookup (GAME_RELAY_URLS, GAME_SERVER_KEY)');
      const found = (await game.players()).find(id);
      // Spec: "online is false and the other members are null", the id included.
      if (!found) return { success: true as const, online: false, gameUserId: null, username: null, permission: null, team: null, wantedStars: null, location: null, raw: null };
      const { username, entry } = found;
      const wanted = Number(entry.WantedStars ?? 0);
      return {
        success: true as const,
        online: true,
        gameUserId: id,
        username,
        permission: entry.Permission ?? null,
        team: entry.Team ?? null,
        wantedStars: Number.isFinite(wanted) ? wanted : 0,
        location: typeof entry.Location === 'object' && entry.Location !== null ? (entry.Location as Record<string, unknown>) : null,
        raw: entry,
      };
    },
  );
};
