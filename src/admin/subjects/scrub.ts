// The erasure's rules for one row, without I/O (issue 32). The person is known by their chat id;
// their names and the words they wrote are learned from the rows that are theirs (a name beside
// their chat id, a report they filed, a message they sent), and are then looked for everywhere
// the person's rows lead: a staff note quoting the reporter loses the quote, keeps the rest.
import { ERASURE_MARKER } from '../../platform/audit-chain/personal-fields.js';
import { ERASED_URL, principalChatId, type CatalogueEntry } from './catalogue.js';

/** Shorter terms are replaced only where they are a whole value: "Al" inside "Also" is not a name. */
const MIN_SUBSTRING = 3;

export interface Subject {
  chatId: string;
  pseudonym: string;
  /** Their names and words, longest first (a longer term containing a shorter one goes first). */
  terms: string[];
}

/**
 * Inside a jsonb value (pre-images, queue payloads): an object whose key names the person owns
 * these sibling keys' values. `reporter` only in a report's shape (it has `reported` too): a
 * queue payload names the reporter beside an agent's message to them.
 */
export const JSON_OWNERSHIP: Readonly<Record<string, readonly string[]>> = {
  reporter: ['reporter_name', 'reason', 'notes', 'evidence', 'evidence_url'],
  reported: ['reported_name'],
  user_id: ['username'],
  chat_id: ['username', 'global_name', 'avatar', 'name'],
  author_chat_id: ['author_name', 'note'],
  sender_chat_id: ['sender_name', 'body'],
  submitted_by: ['description', 'url', 'submitted_by_name'],
  submitted_by_id: ['description', 'url', 'submitted_by_name'],
  actor_chat_id: ['actor_name'],
};
/** A chat profile's whole object as the bot delivered it, beside its named fields (reports/queries.ts). */
const PROFILE_KEY = 'profile';
/** In a report's pre-image whose reporter is the person, their relayed messages carry no sender id. */
const REPORTER_MESSAGE_KEYS = ['body', 'sender_name'];

type Json = unknown;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Who the person is in a row: their chat id, and in an erasure their pseudonym too. A row an
 * earlier erasure left naming the pseudonym is still theirs: a message the bot relays later on a
 * report they filed has the pseudonym as its reporter (issue 39, found by erasure.property.test.ts).
 */
export type PersonIds = readonly string[];
const isPerson = (ids: PersonIds, value: unknown) => typeof value === 'string' && ids.includes(value);
const idsOf = (subject: Pick<Subject, 'chatId' | 'pseudonym'>): PersonIds => [subject.chatId, subject.pseudonym];

function ownedKeys(node: Record<string, unknown>, ids: PersonIds, reporterIsSubject: boolean): Set<string> {
  const owned = new Set<string>();
  for (const [owner, keys] of Object.entries(JSON_OWNERSHIP)) {
    if (!isPerson(ids, node[owner])) continue;
    if (owner === 'reporter' && !('reported' in node)) continue;
    for (const k of keys) owned.add(k);
  }
  if (reporterIsSubject && node.direction === 'from_reporter') for (const k of REPORTER_MESSAGE_KEYS) owned.add(k);
  return owned;
}

/** Calls `found` with every string the person owns inside a jsonb value. */
function ownedStrings(node: Json, ids: PersonIds, found: (s: string) => void, reporterIsSubject = false): void {
  if (Array.isArray(node)) {
    for (const item of node) ownedStrings(item, ids, found, reporterIsSubject);
  } else if (isObject(node)) {
    const inReport = reporterIsSubject || (isPerson(ids, node.reporter) && 'reported' in node);
    const owned = ownedKeys(node, ids, inReport);
    for (const [k, v] of Object.entries(node)) {
      if (owned.has(k) && typeof v === 'string') found(v);
      else ownedStrings(v, ids, found, inReport);
    }
  }
}

const ownerOf = (row: Record<string, unknown>, role: { of: string }) => row[role.of];
const isErased = (s: string) => s === ERASURE_MARKER || s === ERASED_URL;

/** The person's names and words in their rows: the values the erasure turns into the marker. */
export function collectTerms(person: PersonIds, rows: Iterable<{ entry: CatalogueEntry; row: Record<string, unknown> }>): string[] {
  const terms = new Set<string>();
  const add = (s: string) => {
    if (s.trim() !== '' && !isErased(s)) terms.add(s);
  };
  for (const { entry, row } of rows) {
    for (const [column, role] of Object.entries(entry.columns)) {
      const value = row[column];
      if (typeof role === 'object' && isPerson(person, ownerOf(row, role)) && typeof value === 'string') add(value);
      if (role === 'json') ownedStrings(value, person, add);
    }
  }
  return [...terms].sort((a, b) => b.length - a.length || a.localeCompare(b));
}

/** What the URL columns' checks ask of a value (report_evidence.url, reports.evidence_url). */
const HTTP_URL = /^https?:\/\//i;
const URL_MAX = 2000;
const keepsUrlForm = (value: string) => HTTP_URL.test(value) && value.length <= URL_MAX;

/** A letter, digit or underscore: what a word is made of, in any script. */
const WORD_CHAR = /[\p{L}\p{N}_]/u;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where a term occurs as whole words (issue 39, finding 8): an end of the term that is a word
 * character must not touch another one, so "Sam" is not found in "Samantha", nor "spam" in
 * "spamming", nor a chat id inside a longer number. A term ending in punctuation ends there.
 */
export function wholeWords(term: string): RegExp {
  const chars = [...term];
  const before = WORD_CHAR.test(chars[0] ?? '') ? '(?<![\\p{L}\\p{N}_])' : '';
  const after = WORD_CHAR.test(chars.at(-1) ?? '') ? '(?![\\p{L}\\p{N}_])' : '';
  return new RegExp(`${before}${escapeRegExp(term)}${after}`, 'gu');
}

interface Patterns {
  forChatId: string;
  chatId: RegExp;
  /** The terms of MIN_SUBSTRING or more characters, found inside longer values. */
  terms: { term: string; pattern: RegExp }[];
}

// Per subject (its terms array), for the erasure's life only: nothing personal outlives it here.
const patternsBySubject = new WeakMap<readonly string[], Patterns>();
function patternsOf(subject: Pick<Subject, 'chatId' | 'terms'>): Patterns {
  let patterns = patternsBySubject.get(subject.terms);
  if (patterns?.forChatId !== subject.chatId) {
    patterns = { forChatId: subject.chatId, chatId: wholeWords(subject.chatId), terms: subject.terms.filter((t) => t.length >= MIN_SUBSTRING).map((term) => ({ term, pattern: wholeWords(term) })) };
    patternsBySubject.set(subject.terms, patterns);
  }
  return patterns;
}

/** Whether the pattern occurs in the value (a global pattern's search starts over each time). */
const occursIn = (pattern: RegExp, value: string) => {
  pattern.lastIndex = 0;
  return pattern.test(value);
};

/** The person's chat id becomes the pseudonym, their names and words the marker, as whole words; the rest stays. */
export function scrubText(value: string, subject: Subject): string {
  if (value === subject.chatId) return subject.pseudonym;
  if (subject.terms.includes(value)) return ERASURE_MARKER;
  const patterns = patternsOf(subject);
  let out = value;
  for (const { pattern } of patterns.terms) out = out.replace(pattern, ERASURE_MARKER);
  return out.replace(patterns.chatId, subject.pseudonym);
}

/** A jsonb value with the same rules, and what the person owns in it (JSON_OWNERSHIP) marked whole. */
export function scrubJson(node: Json, subject: Subject, reporterIsSubject = false): Json {
  if (typeof node === 'string') return scrubText(node, subject);
  if (Array.isArray(node)) return node.map((item) => scrubJson(item, subject, reporterIsSubject));
  if (!isObject(node)) return node;
  const ids = idsOf(subject);
  const inReport = reporterIsSubject || (isPerson(ids, node.reporter) && 'reported' in node);
  const owned = ownedKeys(node, ids, inReport);
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => {
      // Their chat profile's whole delivered object (a pre-image's chat_profiles): every field of
      // it is theirs, named or not, and the stored profile itself is deleted (issue 39, finding 7).
      if (k === PROFILE_KEY && isPerson(ids, node.chat_id) && isObject(v)) return [k, {}];
      return [k, owned.has(k) && typeof v === 'string' ? ERASURE_MARKER : scrubJson(v, subject, inReport)];
    }),
  );
}

/** The columns of a row whose value an erasure changes, with their new values. */
export function erasedColumns(entry: CatalogueEntry, row: Record<string, unknown>, subject: Subject): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [column, role] of Object.entries(entry.columns)) {
    const value = row[column];
    if (value === null || value === undefined) continue;
    let next: unknown;
    if (role === 'internal') continue;
    if (role === 'json') next = scrubJson(value, subject);
    else if (typeof value !== 'string') continue;
    else if (role === 'chat') next = value === subject.chatId ? subject.pseudonym : value;
    else if (role === 'principal') next = principalChatId(value) === subject.chatId ? `agent:${subject.pseudonym}` : value;
    else if (typeof role === 'object' && isPerson(idsOf(subject), ownerOf(row, role))) next = role.erased ?? ERASURE_MARKER;
    else {
      next = scrubText(value, subject);
      // A value with a form of its own (a URL) keeps it: one the scrub left without it (a whole
      // value of theirs became the marker) is erased into that form. The bot's first evidence row
      // has no submitter but is the reporter's URL (issue 39). Someone else's URL that merely
      // quotes a word of theirs loses that word only, as any other text does.
      if (typeof role === 'object' && role.erased !== undefined && next !== value && !keepsUrlForm(next as string)) next = role.erased;
    }
    if (JSON.stringify(next) !== JSON.stringify(value)) changes[column] = next;
  }
  return changes;
}

/** Whether a sealed row's personal leaf names the person: their chat id, or one of their names or words. */
export function namesSubject(value: string, subject: Pick<Subject, 'chatId' | 'terms'>): boolean {
  const patterns = patternsOf(subject);
  if (occursIn(patterns.chatId, value) || subject.terms.includes(value)) return true;
  return patterns.terms.some(({ pattern }) => occursIn(pattern, value));
}
