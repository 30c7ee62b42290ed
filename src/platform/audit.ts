// Admin audit rows (spec: Resources, "Admin audit row"): written inside the caller's transaction.
import type { Tx } from './db/types.js';
import type { Actor } from './events.js';

export interface AuditInput {
  actor: Actor | { kind: 'operator' };
  action: string;
  target?: string | null;
  reason?: string | null;
  before?: unknown;
  after?: unknown;
  correlationId: string;
}

export async function recordAudit(tx: Tx, entry: AuditInput): Promise<void> {
  await tx.query(
    `insert into audit_log (actor_kind, actor_chat_id, action, target, reason, before, after, correlation_id)
     values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::jsonb, $8::text)`,
    [
      entry.actor.kind,
      entry.actor.kind === 'agent' ? entry.actor.chatId : null,
      entry.action,
      entry.target ?? null,
      entry.reason ?? null,
      entry.before === undefined ? null : JSON.stringify(entry.before),
      entry.after === undefined ? null : JSON.stringify(entry.after),
      entry.correlationId,
    ],
  );
}
