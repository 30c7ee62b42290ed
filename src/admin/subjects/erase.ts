// Erasure on request (issue 32; GDPR article 17), in the caller's one transaction: the person's
// names and the words they wrote become the erasure marker, their chat id their pseudonym in every
// row (the same one everywhere, so their cases stay linked), their chat profile is deleted; events
// and admin audit rows through the audit chain's own primitive (erase-sealed.ts). What the
// organisation decided stays: cases, statuses, punishments and their terms, who on staff did what.
// Refused, with nothing written, while a punishment against them is in force (409
// PUNISHMENT_IN_FORCE) or when they are staff (409 SUBJECT_IS_STAFF: docs/decisions.md). Their open
// user lookups are cancelled: capturing their profile afterwards would bring their data back.
import { pseudonym } from '../../platform/audit-chain/personal-fields.js';
import type { Tx } from '../../platform/db/types.js';
import { errors } from '../../platform/errors.js';
import type { Actor } from '../../platform/events.js';
import { recordAdminChangeBy } from '../trail.js';
import { addSealedCounts, eraseMutableRows, inForceMessage, punishmentInForce } from './erase-rows.js';
import { eraseSealed } from './erase-sealed.js';
import { findSubjectRows } from './queries.js';
import type { Subject } from './scrub.js';

export interface ErasureRequest {
  chatId: string;
  reason: string;
  reference: string;
  actor: Extract<Actor, { kind: 'agent' }> | { kind: 'operator' };
  correlationId: string;
}

export interface ErasureResult {
  success: true;
  /** The erasure's record (subject_erasures), null when nothing named the person any more. */
  erasure_id: string | null;
  pseudonym: string;
  reference: string;
  /** Rows changed (or, for chat profiles, deleted) per table; all zero for a second erasure. */
  counts: Record<string, number>;
  correlation_id: string | null;
}

/** A user lookup the erasure ends: pending, with the bot, or failed (and so requeueable). */
const OPEN_LOOKUP = "kind = 'user_lookup' and status in ('pending', 'processing', 'failed')";

/**
 * Their pending, claimed and failed user lookups, cancelled (the bot's late profile is then refused
 * 409, and a failed one can no longer be requeued to send the bot after the pseudonym); their
 * targets already name the pseudonym. Returns how many.
 */
async function cancelOpenLookups(tx: Tx, ids: string[]): Promise<number> {
  const { rowCount } = await tx.query(
    `update discipline_deliveries set status = 'cancelled', result_note = 'The person was erased (subject erasure): their profile is not captured',
            completed_at = now(), updated_at = now()
      where ${OPEN_LOOKUP} and user_id = any($1::text[])`,
    [ids],
  );
  return rowCount;
}

/** Erases everything held about `chatId`; the pseudonym key is the environment's (subject-key.ts). */
export async function eraseSubject(tx: Tx, key: Buffer, request: ErasureRequest): Promise<ErasureResult> {
  const { chatId } = request;
  const alias = pseudonym(key, chatId);
  // One erasure of a person at a time: a second one waits, then finds nothing left to erase.
  await tx.query('select pg_advisory_xact_lock(hashtextextended($1::text, 32))', [`subject:${alias}`]);
  const { rows: staff } = await tx.query('select 1 from agents where chat_id = $1::text', [chatId]);
  if (staff.length > 0) throw errors.conflict(`${chatId} is an agent: staff records are not erased by a subject erasure`, 'SUBJECT_IS_STAFF');
  // Their open lookups first: the bot's profile delivery locks its lookup before it stores the
  // profile, so one under way commits before the rows are read (and is erased), or finds the
  // lookup cancelled (409). Read after chat_profiles, it could commit unseen (issue 39, review).
  await tx.query(
    `select 1 from discipline_deliveries where ${OPEN_LOOKUP} and user_id = $1::text order by item_id for update`,
    [chatId],
  );
  const { terms, found } = await findSubjectRows(tx, chatId, { lock: true, pseudonym: alias });
  // After their rows are locked: a punishment issued while the erasure waited for them is seen here
  // (checked before, it was erased with the rest, its ban delivered to the pseudonym; issue 39).
  const inForce = await punishmentInForce(tx, [chatId]);
  if (inForce) throw errors.conflict(inForceMessage(inForce), 'PUNISHMENT_IN_FORCE');
  const subject: Subject = { chatId, pseudonym: alias, terms };
  const counts = await eraseMutableRows(tx, found, [subject]);
  const cancelled = await cancelOpenLookups(tx, [chatId, alias]);
  if (cancelled > 0) counts.user_lookups_cancelled = cancelled;

  // The operator's words are kept, but never the chat id they may quote: the record names the pseudonym.
  const reason = request.reason.split(chatId).join(alias);
  const reference = request.reference.split(chatId).join(alias);
  const sealedRows = found.filter(({ entry }) => entry.erase === 'sealed');
  if (Object.keys(counts).length === 0 && sealedRows.length === 0) {
    return { success: true, erasure_id: null, pseudonym: alias, reference, counts: {}, correlation_id: null };
  }
  const { rows } = await tx.query<{ id: string }>(
    `insert into subject_erasures (pseudonym, reason, reference, actor_kind, actor_chat_id, counts, correlation_id)
     values ($1::text, $2::text, $3::text, $4::text, $5::text, '{}'::jsonb, $6::text) returning id::text`,
    [alias, reason, reference, request.actor.kind, request.actor.kind === 'agent' ? request.actor.chatId : null, request.correlationId],
  );
  const erasureId = rows[0]!.id;
  const sealed = await eraseSealed(tx, { id: erasureId, reference }, sealedRows, [subject]);
  addSealedCounts(counts, sealed);
  await tx.query('update subject_erasures set counts = $2::jsonb where id = $1::bigint', [erasureId, JSON.stringify(counts)]);
  await recordAdminChangeBy(tx, request.actor, request.correlationId, {
    action: 'admin.subject_erased',
    target: alias,
    reason,
    // `fields`: what verify-audit accepts as erased in sealed rows (erasure-records.ts).
    after: { erasure_id: erasureId, reference, counts, fields: sealed.fields },
  });
  return { success: true, erasure_id: erasureId, pseudonym: alias, reference, counts, correlation_id: request.correlationId };
}
