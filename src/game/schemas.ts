// GET /game/player/<game_user_id> (spec: Game server lookup).
import { Type } from 'typebox';
import { nullableString } from '../platform/http/schemas.js';

export const GamePlayerParams = Type.Object({
  game_user_id: Type.String({ pattern: '^[1-9][0-9]{0,15}$', description: 'The player’s game (Roblox) user id: a positive integer up to 2^53 - 1' }),
});

// Nullable members as JSON Schema type lists, not anyOf: the serializer writes a type list
// directly, where an anyOf costs a validation per member per response to pick the branch.
const nullableObject = (description: string) =>
  Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true, description });
const Upstream = Type.Unknown({ description: 'As the game server gives it' });

export const GamePlayer = Type.Object({
  success: Type.Literal(true),
  online: Type.Boolean({ description: 'The player is in the game server now' }),
  gameUserId: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'The player’s id while online; null when not in the server' }),
  username: nullableString(),
  permission: Upstream,
  team: Upstream,
  wantedStars: Type.Unsafe<number | null>({ type: ['number', 'null'], description: '0 when the upstream omits it' }),
  location: nullableObject('{LocationX, LocationZ, PostalCode, StreetName, BuildingNumber} as the upstream gives it, or null'),
  raw: nullableObject('The upstream player entry'),
});
