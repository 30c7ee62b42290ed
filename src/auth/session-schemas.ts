import { Type } from 'typebox';
import { ADMIN_CAPABILITIES } from '../platform/auth/guards.js';
import { PERMISSIONS } from '../platform/auth/permissions.js';

const flags = (names: readonly string[]) => Type.Object(Object.fromEntries(names.map((n) => [n, Type.Boolean()])));

export const MeResult = Type.Object({
  success: Type.Literal(true),
  agent: Type.Ref('Agent'),
  permissions: flags(PERMISSIONS),
  can_handle_supervisor: Type.Boolean({ description: 'Supervisor rank or above: may see supervisor-flagged reports' }),
  minimum_clearances: Type.Object(Object.fromEntries(PERMISSIONS.map((p) => [p, Type.Integer({ minimum: 1, maximum: 5 })]))),
  admin: Type.Object({
    allowlisted: Type.Boolean({ description: 'An active entry on the admin allowlist' }),
    capabilities: flags(ADMIN_CAPABILITIES),
  }),
});

export const LogoutResult = Type.Object({ success: Type.Literal(true) });
