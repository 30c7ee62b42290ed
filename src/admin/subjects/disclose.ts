// The access export's withholding (issue 39, finding 3; GDPR article 15(4): a right of access must
// not adversely affect the rights of others). Without I/O: each row the export found is shown to
// the person with other people's identities and words replaced by WITHHELD, and counted. What is
// the person's stays (their chat id, names and words), and so do the organisation's decisions about
// them (statuses, punishments and their terms, timeline entries). Staff are other people here:
// who on staff acted is withheld, and a staff note on a case about the person is disclosed for its
// content (docs/personal-data.md says why). A contact thread between another reporter and staff is
// not the person's at all: withheld whole.
import { CHAT_ID_KEYS, NAME_KEYS, TEXT_KEYS } from '../../platform/audit-chain/personal-fields.js';
import { principalChatId, type CatalogueEntry } from './catalogue.js';
import { JSON_OWNERSHIP } from './scrub.js';

export const WITHHELD = '[withheld]';

/** What an export needs to know of the person: who they are, and their part in each case. */
export interface Requester {
  chatId: string;
  /** Reports where they are the reported party and not the reporter. */
  reportedIn: ReadonlySet<string>;
  /** Reports they filed: staff's messages to them there are theirs to read. */
  reporterIn: ReadonlySet<string>;
}

/** Why a value is withheld, as the export document counts them. */
export type WithheldReason = 'other_people' | 'staff' | 'contact_of_others';

export interface Disclosed {
  /** The row as shown, or undefined when it is withheld whole. */
  row: Record<string, unknown> | undefined;
  withheld: Partial<Record<WithheldReason, number>>;
}

const chatIdKeys = new Set(CHAT_ID_KEYS);
const nameKeys = new Set(NAME_KEYS);
const textKeys = new Set(TEXT_KEYS);
/** Keys naming staff acting in their role (the rest of the chat-id keys name parties). */
const STAFF_KEYS = new Set(['assigned_agent', 'issued_by', 'revoked_by', 'closed_by', 'requested_by', 'granted_by', 'actor_chat_id', 'author_chat_id', 'evaluated_by', 'trainer_id', 'trainee_id', 'deleted_by_chat_id']);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

class Tally {
  readonly counts: Partial<Record<WithheldReason, number>> = {};
  /** The names withheld (never words): looked for again in the texts shown (withholdNames). */
  readonly names = new Set<string>();
  add(reason: WithheldReason, name?: unknown): typeof WITHHELD {
    this.counts[reason] = (this.counts[reason] ?? 0) + 1;
    if (typeof name === 'string' && name.trim() !== '') this.names.add(name);
    return WITHHELD;
  }
}

/** Who owns each key of an object (JSON_OWNERSHIP): the chat id beside it, and the key naming it. */
function ownersOf(node: Record<string, unknown>): Map<string, { id: string; via: string }> {
  const owners = new Map<string, { id: string; via: string }>();
  for (const [via, keys] of Object.entries(JSON_OWNERSHIP)) {
    const id = node[via];
    if (typeof id !== 'string') continue;
    if (via === 'reporter' && !('reported' in node)) continue;
    for (const k of keys) if (!owners.has(k)) owners.set(k, { id, via });
  }
  return owners;
}

/** Where a jsonb value sits: the person, and the case the nearest report (or the row) is. */
interface Context {
  me: string;
  /** The case is one they filed: its words with no owner named (the bot's evidence row) are theirs. */
  ownReport: boolean;
  /** The case is about them, filed by someone else: staff notes' content about them is shown. */
  aboutThem: boolean;
  /** Inside another person's object (a chat profile, its delivered `profile`): none of it is theirs. */
  foreign: boolean;
}

/** The context of a row's values, from the case it is on. */
const caseContext = (who: Requester, reportId: unknown): Context => ({
  me: who.chatId,
  ownReport: typeof reportId === 'string' && who.reporterIn.has(reportId),
  aboutThem: typeof reportId === 'string' && who.reportedIn.has(reportId),
  foreign: false,
});

/** The context inside an object: a report's shape sets the case, another person's chat id the foreign part. */
function enter(node: Record<string, unknown>, ctx: Context): Context {
  let next = ctx;
  if (typeof node.reporter === 'string' && 'reported' in node) {
    next = { ...next, ownReport: node.reporter === ctx.me, aboutThem: node.reported === ctx.me && node.reporter !== ctx.me };
  }
  if (typeof node.chat_id === 'string' && node.chat_id !== ctx.me) next = { ...next, foreign: true };
  return next;
}

/**
 * A jsonb value (a pre-image, a payload, an event's before, after and data) as the person is shown
 * it. Personal leaves (the keys of audit-chain/personal-fields.ts) are shown only when they are the
 * person's: their chat id; a name or word whose owner in the object is them; a word with no owner
 * on a case they filed; the decision in a punishment of theirs; a staff note's content on a case
 * about them; a timeline entry's text. Every other personal leaf is withheld, and so is everything
 * of another person's object (their chat profile's delivered fields, whatever their keys).
 */
/** The object a leaf is in, with who owns its keys (read once per object). */
interface Parent {
  node: Record<string, unknown>;
  owners: ReturnType<typeof ownersOf>;
}

function discloseJson(node: unknown, ctx: Context, tally: Tally, key = '', parent?: Parent): unknown {
  if (Array.isArray(node)) return node.map((item) => discloseJson(item, ctx, tally, key, parent));
  if (isObject(node)) {
    const inner = enter(node, ctx);
    const here = { node, owners: ownersOf(node) };
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, discloseJson(v, inner, tally, k, here)]));
  }
  if (typeof node !== 'string' && typeof node !== 'number') return node;
  if (chatIdKeys.has(key)) return node === ctx.me ? node : tally.add(STAFF_KEYS.has(key) ? 'staff' : 'other_people', node);
  if (ctx.foreign) return tally.add('other_people', nameKeys.has(key) ? node : undefined);
  if (typeof node !== 'string' || !(nameKeys.has(key) || textKeys.has(key))) return node;
  const owner = parent?.owners.get(key);
  if (owner !== undefined) {
    if (owner.id === ctx.me) return node;
    if (key === 'note' && ctx.aboutThem) return node;
    return tally.add(STAFF_KEYS.has(owner.via) ? 'staff' : 'other_people', nameKeys.has(key) ? node : undefined);
  }
  if (nameKeys.has(key)) return tally.add('other_people', node);
  const decision = parent !== undefined && parent.node.user_id === ctx.me && 'punishment_id' in parent.node;
  if (decision || key === 'event' || ctx.ownReport) return node;
  return tally.add('other_people');
}

/** A mutable table's row: each column by its catalogue role (catalogue.ts). */
function discloseColumns(entry: CatalogueEntry, row: Record<string, unknown>, who: Requester, tally: Tally): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...row };
  const onCaseAboutThem = typeof row.report_id === 'string' && who.reportedIn.has(row.report_id);
  for (const [column, role] of Object.entries(entry.columns)) {
    const value = row[column];
    if (value === null || value === undefined) continue;
    if (role === 'json') shown[column] = discloseJson(value, caseContext(who, row.report_id), tally, column);
    else if (role === 'chat') shown[column] = value === who.chatId ? value : tally.add(STAFF_KEYS.has(column) ? 'staff' : 'other_people', value);
    else if (role === 'internal') delete shown[column];
    else if (role === 'principal') {
      // Only staff sign in: an agent who is not the person is staff.
      const agent = principalChatId(String(value));
      if (agent !== undefined && agent !== who.chatId) shown[column] = tally.add('staff', agent);
    }
    else if (typeof role === 'object') {
      const owner = row[role.of];
      if (owner === who.chatId) continue;
      // A staff note on a case about them: its content, never its author (docs/personal-data.md).
      if (entry.table === 'report_notes' && column === 'note' && onCaseAboutThem) continue;
      // Staff's messages to them on a case they filed were sent to them: the words, not the sender.
      if (entry.table === 'contact_messages' && column === 'body' && row.direction === 'to_reporter' && typeof row.report_id === 'string' && who.reporterIn.has(row.report_id)) continue;
      shown[column] = tally.add(entry.table === 'report_notes' || STAFF_KEYS.has(role.of) ? 'staff' : 'other_people', nameKeys.has(column) ? value : undefined);
    }
  }
  return shown;
}

/** A sealed row (events, audit_log): its top-level personal columns, then its jsonb columns. */
function discloseSealed(row: Record<string, unknown>, who: Requester, tally: Tally): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...row };
  const mine = row.actor_chat_id === who.chatId;
  if (typeof row.actor_chat_id === 'string' && !mine) shown.actor_chat_id = tally.add('staff', row.actor_chat_id);
  if (typeof row.actor_name === 'string' && !mine) shown.actor_name = tally.add('staff', row.actor_name);
  if (typeof row.target === 'string' && row.target !== who.chatId && /^[0-9]{1,20}$/.test(row.target)) shown.target = tally.add('other_people');
  const ctx = caseContext(who, row.report_id);
  for (const column of ['before', 'after', 'data']) if (isObject(row[column]) || Array.isArray(row[column])) shown[column] = discloseJson(row[column], ctx, tally, column);
  return shown;
}

/** The contact with another reporter on a case about them: its thread, messages and the bot's sends of them. */
const contactOfOthers = (entry: CatalogueEntry, row: Record<string, unknown>, who: Requester) =>
  typeof row.report_id === 'string' &&
  who.reportedIn.has(row.report_id) &&
  (entry.table === 'contact_messages' || entry.table === 'contact_threads' || (entry.table === 'report_actions' && String(row.kind).startsWith('contact_')));

/** The row as the person is shown it in their access export, and what was withheld of it (names included, for withholdNames). */
export function discloseRow(entry: CatalogueEntry, row: Record<string, unknown>, who: Requester): Disclosed & { names: ReadonlySet<string> } {
  const tally = new Tally();
  if (contactOfOthers(entry, row, who)) {
    tally.add('contact_of_others');
    return { row: undefined, withheld: tally.counts, names: tally.names };
  }
  const shown = entry.erase === 'sealed' ? discloseSealed(row, who, tally) : discloseColumns(entry, row, who, tally);
  return { row: shown, withheld: tally.counts, names: tally.names };
}

/**
 * The names and chat ids withheld anywhere in the export (and the names of the staff among them),
 * withheld again where a free text shown quotes them as whole words ("Assigned to <agent>" in a
 * timeline entry); never in other fields (a status), never the person's own names. Counted as
 * `other_people` in the kind of the row.
 */
export function withholdNames(row: Record<string, unknown>, names: readonly RegExp[]): { row: Record<string, unknown>; withheld: number } {
  let withheld = 0;
  const walk = (node: unknown, key: string): unknown => {
    if (typeof node === 'string') {
      if (node === WITHHELD || !textKeys.has(key)) return node;
      let out = node;
      for (const name of names) out = out.replace(name, () => (withheld++, WITHHELD));
      return out;
    }
    if (Array.isArray(node)) return node.map((item) => walk(item, key));
    if (isObject(node)) return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, k)]));
    return node;
  };
  return { row: walk(row, '') as Record<string, unknown>, withheld };
}
