// What an erasure may change in a sealed row (issues 32 and 39): the personal fields. A sealed row
// of events or audit_log is erasable only in these string leaves; every other byte of it stays
// covered by its seal as before.
//
//   - top-level columns: events.actor_chat_id, events.actor_name, audit_log.actor_chat_id,
//     audit_log.target, audit_log.reason;
//   - inside the jsonb columns (before, after, data): every string leaf whose nearest object key
//     (array elements take their array's key) is in PERSONAL_KEYS.
//
// That is form 2's list, fixed: a form-2 seal committed to exactly these leaves. Form 3 (issue 39)
// leaves out STAFF_KEYS: who on staff acted, in their role, is not a subject's personal data, and a
// subject erasure never changes it (finding 5); in form 3 those leaves are hashed as they are, and
// in form 2 an erased one is an edit (forms.ts).
//
// PERSONAL_KEYS was checked against what src/ writes into events and audit_log: report rows and
// pre-images (notes_list, evidence_list, timeline, chat_profiles inside them), punishment and
// agent rows, contact threads, deliveries, training sessions. It adds to the design's list the
// keys those writers use for the same things: submitted_by_id and submitted_by_name (evidence in
// a pre-image), assigned_agent_name (a report's resolved name), event (a timeline entry's free
// text, e.g. "Report deleted: <reason>"), trainer_id and trainee_id (a training session's
// creation), evaluated_by. Changing a list changes what seals commit to: a new list is a new form.
//
// An erased chat id becomes a pseudonym ('0' + 19 digits from HMAC-SHA-256): it passes the
// schema's ^[0-9]{1,20}$ checks, and a chat platform's ids (snowflakes) never start with 0, so a
// pseudonym never names a real person. Any other erased field becomes ERASURE_MARKER.
import { createHmac } from 'node:crypto';
import type { SealedTable } from './hashes.js';

export const ERASURE_MARKER = '[erased]';

/** Keys whose string values are chat ids: erased to a pseudonym. */
export const CHAT_ID_KEYS: readonly string[] = Object.freeze([
  'reporter', 'reported', 'user_id', 'chat_id', 'author_chat_id', 'sender_chat_id', 'submitted_by', 'submitted_by_id',
  'assigned_agent', 'issued_by', 'revoked_by', 'closed_by', 'requested_by', 'granted_by', 'actor_chat_id', 'target',
  'trainer_id', 'trainee_id', 'evaluated_by',
]);

/** Keys whose string values are names or chat profile fields. */
export const NAME_KEYS: readonly string[] = Object.freeze([
  'name', 'username', 'global_name', 'avatar', 'reporter_name', 'reported_name', 'author_name', 'sender_name',
  'issued_by_name', 'closed_by_name', 'actor_name', 'submitted_by_name', 'assigned_agent_name',
]);

/** Keys whose string values are free text someone wrote. */
export const TEXT_KEYS: readonly string[] = Object.freeze([
  'reason', 'notes', 'evidence', 'note', 'body', 'description', 'detailed_reason', 'revoke_reason', 'evidence_url',
  'url', 'result_note', 'last_error', 'content', 'text', 'message', 'event',
]);

export const PERSONAL_KEYS: readonly string[] = Object.freeze([...CHAT_ID_KEYS, ...NAME_KEYS, ...TEXT_KEYS]);

/**
 * Keys whose values are always staff acting in their role (or the service): the actor of an event
 * or admin change (agents only: the bot's and the service's have no chat id), who issued, revoked,
 * closed, was assigned, granted, requested, evaluated or trained, and a note's author (notes are
 * staff's). Never erased (form 3 does not commit to them separately).
 */
export const STAFF_KEYS: readonly string[] = Object.freeze([
  'actor_chat_id', 'actor_name', 'issued_by', 'issued_by_name', 'revoked_by', 'closed_by', 'closed_by_name', 'assigned_agent',
  'assigned_agent_name', 'granted_by', 'requested_by', 'evaluated_by', 'trainer_id', 'trainee_id', 'author_chat_id', 'author_name',
]);

/** The seal forms that commit to personal fields separately. */
export type PersonalForm = 2 | 3;

const personal = new Set(PERSONAL_KEYS);
const staff = new Set(STAFF_KEYS);
const chatIds = new Set(CHAT_ID_KEYS);

export const isPersonalKey = (key: string): boolean => personal.has(key);
export const isStaffKey = (key: string): boolean => staff.has(key);
/** A key whose values an erasure may change: personal and not staff's. */
export const isErasableKey = (key: string): boolean => personal.has(key) && !staff.has(key);
export const isChatIdKey = (key: string): boolean => chatIds.has(key);
const personalIn = (form: PersonalForm) => (form === 2 ? isPersonalKey : isErasableKey);

/** The top-level columns of a sealed row that are personal, and the jsonb columns searched inside. */
export const PERSONAL_COLUMNS: Record<SealedTable, readonly string[]> = {
  events: ['actor_chat_id', 'actor_name'],
  audit_log: ['actor_chat_id', 'target', 'reason'],
};
export const JSON_COLUMNS: Record<SealedTable, readonly string[]> = {
  events: ['before', 'after', 'data'],
  audit_log: ['before', 'after'],
};

/** The key an HMAC of chat ids uses, derived from a server-side secret for this one purpose. */
export function pseudonymKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('subject-pseudonym').digest();
}

const NINETEEN_DIGITS = 10n ** 19n;

/**
 * The stable pseudonym of a chat id under `key`: '0' and 19 digits. The first 8 bytes of the HMAC
 * as an unsigned 64-bit integer can have 20 digits; it is taken modulo 10^19 so that the whole
 * stays within 20 characters (a bias of under 2^-3 over 19 digits, irrelevant for a label).
 */
export function pseudonym(key: Buffer | string, chatId: string): string {
  const n = createHmac('sha256', key).update(chatId, 'utf8').digest().readBigUInt64BE(0) % NINETEEN_DIGITS;
  return '0' + n.toString().padStart(19, '0');
}

export const isPseudonym = (s: string): boolean => /^0[0-9]{19}$/.test(s);

/** What an erased leaf under `key` may hold: the marker, or for a chat id a pseudonym. */
export function isErasedValue(key: string, value: unknown): boolean {
  return typeof value === 'string' && (value === ERASURE_MARKER || (isChatIdKey(key) && isPseudonym(value)));
}

// --- The erasable leaves of a row (JSON pointers, RFC 6901) ---

export interface PersonalLeaf {
  /** The JSON pointer into the row as sealed, e.g. /actor_name, /before/notes_list/0/note. */
  pointer: string;
  /** The nearest object key: decides marker or pseudonym. */
  key: string;
  value: string;
}

export const escapeToken = (t: string) => t.replace(/~/g, '~0').replace(/\//g, '~1');
const unescapeToken = (t: string) => t.replace(/~1/g, '/').replace(/~0/g, '~');

export function parsePointer(pointer: string): string[] {
  if (!pointer.startsWith('/')) throw new Error(`not a JSON pointer: ${JSON.stringify(pointer)}`);
  return pointer.slice(1).split('/').map(unescapeToken);
}

/**
 * The personal string leaves of a sealed row in a seal form, in document order: in form 3 (the
 * sealer's since issue 39) the erasable ones; in form 2 staff's too, as form-2 seals committed.
 */
export function personalLeaves(source: SealedTable, row: Record<string, unknown>, form: PersonalForm = 3): PersonalLeaf[] {
  const isPersonal = personalIn(form);
  const leaves: PersonalLeaf[] = [];
  for (const column of PERSONAL_COLUMNS[source]) {
    const value = row[column];
    if (typeof value === 'string' && isPersonal(column)) leaves.push({ pointer: `/${escapeToken(column)}`, key: column, value });
  }
  const walk = (node: unknown, pointer: string, key: string) => {
    if (typeof node === 'string') {
      if (isPersonal(key)) leaves.push({ pointer, key, value: node });
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, `${pointer}/${i}`, key));
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) walk(v, `${pointer}/${escapeToken(k)}`, k);
    }
  };
  for (const column of JSON_COLUMNS[source]) {
    if (row[column] !== null && typeof row[column] === 'object') walk(row[column], `/${escapeToken(column)}`, column);
  }
  return leaves;
}

/** The leaf a pointer names when it is erasable, else undefined. */
export function personalLeafAt(source: SealedTable, row: Record<string, unknown>, pointer: string): PersonalLeaf | undefined {
  return personalLeaves(source, row).find((l) => l.pointer === pointer);
}
