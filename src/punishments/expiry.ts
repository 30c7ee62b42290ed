// Expiry runs wherever punishments are observed: before every punishment route and before each
// discipline pickup. The bot polls constantly, so an expired punishment is lifted promptly, and no
// reader ever sees a punishment in force past its expires_at. Many instances may run it at once.
import type { Environment } from '../platform/environments.js';
import { expireDuePunishments } from './queries.js';

/** Expires what is due; what this instance keeps (audit answers, idle queues) is cleared when anything expired. */
export async function expirePunishments(env: Environment, correlationId: string): Promise<string[]> {
  const expired = await expireDuePunishments(env.db, correlationId);
  if (expired.length > 0) {
    env.auditPages.clear();
    env.idleQueues.clear();
  }
  return expired;
}
