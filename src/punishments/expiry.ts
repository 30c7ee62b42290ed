// Expiry runs wherever punishments are observed: before every punishment route and before each
// discipline pickup. The bot polls constantly, so an expired punishment is lifted promptly, and no
// reader ever sees a punishment in force past its expires_at. Many instances may run it at once.
import type { Environment } from '../platform/environments.js';
import { expireDuePunishments } from './queries.js';
import { afterCommit } from '../platform/after-commit.js';

/** Expires what is due; this instance's idle queues are cleared when anything expired. */
export async function expirePunishments(env: Environment, correlationId: string): Promise<string[]> {
  const expired = await expireDuePunishments(env.db, correlationId);
  if (expired.length > 0) await afterCommit(env, () => env.idleQueues.clear());
  return expired;
}
