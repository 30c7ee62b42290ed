// The personal-data catalogue (issue 32): every table that can name a person by chat id, the query
// that finds that person's rows through an index (migration 0027), and what each personal column
// is, which decides what an erasure does to it. The export (export.ts) and the erasure (erase.ts)
// both read it, and test/subjects-catalogue.test.ts checks that every table with a text or jsonb
// column is either here or in NO_PERSONAL_DATA with the reason, so a new table cannot be forgotten.
//
// Each query takes $1 the chat id, $2 the ids of the reports naming them (as reporter or reported)
// $3 the ids of the deleted reports whose pre-image names them, $4 the report ids of both
// (subject-queries.ts), and returns the row with `_id` and `_at` (its id and time) and, where a
// column's owner is not in the row itself, `_owner`. Events and admin audit rows are candidates:
// the caller keeps those with a personal leaf naming the person (by chat id, name or words).

/**
 * What a column holds, for the erasure:
 * - `chat`: a chat id; the person's becomes their pseudonym.
 * - `{ of }`: a name or text written by whoever the column `of` names; the marker (or `erased`) when
 *   that is the person, otherwise only the person's chat id, names and words inside it are replaced.
 * - `text`: someone else's free text (staff's, the bot's): the person's chat id, names and words
 *   inside it are replaced, the rest stays (what the organisation decided).
 * - `json`: a jsonb value, walked leaf by leaf with the same rules (scrub.ts).
 * - `principal`: who made a request, as an Idempotency-Key's scope names them (`key` for the bot,
 *   `agent:<chat id>`): a chat id in another form, by the same rules.
 * - `internal`: what finds the row again (an Idempotency-Key, of the client's choosing): never shown
 *   in an export, never changed by an erasure.
 */
export type ColumnRole = 'chat' | 'text' | 'json' | 'principal' | 'internal' | { of: string; erased?: string };

/** The chat id a `principal` value names (an agent's), or undefined (the bot's key). */
export const principalChatId = (scope: string): string | undefined => (scope.startsWith('agent:') ? scope.slice('agent:'.length) : undefined);

/** What an erased URL column becomes where the schema wants an http(s) URL: a reserved name (RFC 2606). */
export const ERASED_URL = 'https://erased.invalid/';

export interface CatalogueEntry {
  /** The group in the export. Several kinds may read one table (reports as reporter, as reported). */
  kind: string;
  table: string;
  /** The primary key, which the erasure updates by. */
  key: readonly string[];
  sql: string;
  /** The erasure: update the personal columns, delete the row (chat profiles), or the sealed rows' primitive. */
  erase: 'update' | 'delete' | 'sealed';
  columns: Readonly<Record<string, ColumnRole>>;
  /** Staff only: a chat id naming these rows is an agent, whose erasure is refused (STYLE: decisions.md). */
  staff?: true;
}

const REPORT_COLUMNS = {
  reporter: 'chat', reported: 'chat', assigned_agent: 'chat',
  reporter_name: { of: 'reporter' }, reported_name: { of: 'reported' },
  // A report is filed by the bot on the reporter's behalf: its reason, notes and evidence are the reporter's words.
  reason: { of: 'reporter' }, notes: { of: 'reporter' }, evidence: { of: 'reporter' }, evidence_url: { of: 'reporter', erased: ERASED_URL },
} as const satisfies Record<string, ColumnRole>;

const report = (kind: string, where: string): CatalogueEntry => ({
  kind, table: 'reports', key: ['report_id'], erase: 'update', columns: REPORT_COLUMNS,
  sql: `select r.*, r.report_id as _id, r.created_at as _at from reports r where ${where} order by r.created_at, r.report_id`,
});

export const CATALOGUE: readonly CatalogueEntry[] = [
  report('reports_as_reporter', 'r.reporter = $1::text'),
  report('reports_as_reported', 'r.reported = $1::text'),
  { ...report('reports_assigned', 'r.assigned_agent = $1::text'), staff: true },
  {
    kind: 'notes', table: 'report_notes', key: ['id'], erase: 'update',
    columns: { author_chat_id: 'chat', author_name: { of: 'author_chat_id' }, note: { of: 'author_chat_id' } },
    sql: `select n.*, n.id::text as _id, n.created_at as _at from report_notes n
          where n.author_chat_id = $1::text or n.report_id = any($2::text[]) order by n.id`,
  },
  {
    kind: 'evidence', table: 'report_evidence', key: ['id'], erase: 'update',
    columns: { submitted_by: 'chat', description: { of: 'submitted_by' }, url: { of: 'submitted_by', erased: ERASED_URL } },
    sql: `select e.*, e.id::text as _id, e.created_at as _at from report_evidence e
          where e.submitted_by = $1::text or e.report_id = any($2::text[]) order by e.id`,
  },
  {
    kind: 'timeline', table: 'report_timeline', key: ['id'], erase: 'update',
    columns: { actor_chat_id: 'chat', actor_name: { of: 'actor_chat_id' }, event: 'text' },
    sql: `select t.*, t.id::text as _id, t.created_at as _at from report_timeline t
          where t.actor_chat_id = $1::text or t.report_id = any($2::text[]) or t.deleted_report = any($3::bigint[]) order by t.id`,
  },
  {
    kind: 'contact_threads', table: 'contact_threads', key: ['report_id'], erase: 'update',
    columns: { closed_by: 'chat', closed_by_name: { of: 'closed_by' } },
    sql: `select c.*, c.report_id as _id, c.created_at as _at from contact_threads c
          where c.closed_by = $1::text or c.report_id = any($2::text[]) order by c.created_at, c.report_id`,
  },
  {
    // The reporter's own messages carry no sender chat id (the bot relays them): their owner is the report's reporter.
    kind: 'contact_messages', table: 'contact_messages', key: ['id'], erase: 'update',
    columns: { sender_chat_id: 'chat', sender_name: { of: '_owner' }, body: { of: '_owner' } },
    sql: `select m.*, m.id::text as _id, m.created_at as _at,
                 case when m.direction = 'from_reporter' then (select r.reporter from reports r where r.report_id = m.report_id) else m.sender_chat_id end as _owner
          from contact_messages m where m.sender_chat_id = $1::text or m.report_id = any($2::text[]) order by m.id`,
  },
  {
    kind: 'report_actions', table: 'report_actions', key: ['action_id'], erase: 'update',
    columns: { requested_by: 'chat', payload: 'json', result_note: 'text', last_error: 'text' },
    sql: `select a.*, a.action_id::text as _id, a.created_at as _at from report_actions a
          where a.requested_by = $1::text or a.report_id = any($2::text[]) order by a.action_id`,
  },
  {
    // Deleted by an erasure; the columns say which of its values are the person's names (scrub.ts).
    kind: 'chat_profiles', table: 'chat_profiles', key: ['chat_id'], erase: 'delete',
    columns: { chat_id: 'chat', username: { of: 'chat_id' }, global_name: { of: 'chat_id' }, avatar: { of: 'chat_id' }, profile: 'json' },
    sql: `select p.*, p.chat_id as _id, p.updated_at as _at from chat_profiles p where p.chat_id = $1::text`,
  },
  {
    // Their existence and terms are the organisation's decision: only names and the person's own words go.
    kind: 'punishments', table: 'punishments', key: ['punishment_id'], erase: 'update',
    columns: {
      user_id: 'chat', username: { of: 'user_id' }, issued_by: 'chat', issued_by_name: { of: 'issued_by' }, revoked_by: 'chat',
      reason: 'text', detailed_reason: 'text', evidence: 'text', notes: 'text', revoke_reason: 'text',
    },
    sql: `select p.*, p.punishment_id as _id, p.created_at as _at from punishments p
          where p.user_id = $1::text or p.issued_by = $1::text or p.revoked_by = $1::text order by p.created_at, p.punishment_id`,
  },
  {
    kind: 'deliveries', table: 'discipline_deliveries', key: ['item_id'], erase: 'update',
    columns: { user_id: 'chat', requested_by: 'chat', result_note: 'text', last_error: 'text', ref: 'text' },
    sql: `select d.*, d.item_id::text as _id, d.created_at as _at from discipline_deliveries d
          where d.user_id = $1::text or d.requested_by = $1::text order by d.item_id`,
  },
  {
    kind: 'deleted_reports', table: 'deleted_reports', key: ['id'], erase: 'update',
    columns: { pre_image: 'json', reason: 'text', deleted_by_chat_id: 'chat' },
    sql: `select d.*, d.id::text as _id, d.deleted_at as _at from deleted_reports d
          where d.id = any($3::bigint[]) or d.deleted_by_chat_id = $1::text order by d.id`,
  },
  {
    // Candidates: the trigram index (0005) finds rows whose text holds the chat id, the actor index
    // their own, the report index those of their reports (which may hold their names or words).
    kind: 'events', table: 'events', key: ['id'], erase: 'sealed', columns: {},
    sql: `select e.id, e.type, e.actor_kind, e.actor_chat_id, e.actor_name, e.report_id, e.before, e.after, e.data, e.correlation_id,
                 e.is_supervisor, e.created_at, e.id::text as _id, e.created_at as _at from events e
          where e.actor_chat_id = $1::text or e.search_text like '%' || $1::text || '%' or e.report_id = any($4::text[]) order by e.id`,
  },
  {
    kind: 'audit_log', table: 'audit_log', key: ['id'], erase: 'sealed', columns: {},
    sql: `select a.id, a.actor_kind, a.actor_chat_id, a.action, a.target, a.reason, a.before, a.after, a.correlation_id, a.created_at,
                 a.id::text as _id, a.created_at as _at from audit_log a
          where a.actor_chat_id = $1::text or a.target = $1::text or a.target = any($4::text[])
             or audit_log_search_text(a.reason, a.before, a.after) like '%' || $1::text || '%' order by a.id`,
  },
  {
    // A request's answer kept for its retries (Idempotency-Key, issue 41): what the principal was
    // answered, anyone's data in it. Deleted when it names the person or one of their reports (a
    // retry after the erasure runs afresh); the export lists that one exists, never its body, and
    // who asked only when it was the bot or the person themselves.
    // Its id is a digest of the client's key (which the export does not show) and its time: not of
    // the principal, nor of the request, whose fingerprint could be matched against the staff an
    // export withholds (a request naming the agent a case is assigned to).
    kind: 'stored_answers', table: 'idempotency_keys', key: ['scope', 'key'], erase: 'delete', columns: { scope: 'principal', key: 'internal' },
    sql: `select k.scope, k.key, k.status, k.created_at, md5(k.key || ' ' || k.created_at::text) as _id, k.created_at as _at from idempotency_keys k
          where k.scope = 'agent:' || $1::text or strpos(k.body, $1::text) > 0
             or exists (select 1 from unnest($4::text[]) as r(id) where strpos(k.body, to_json(r.id)::text) > 0)
          order by k.created_at`,
  },
  // Staff: the agent row, browser sessions (never the token's hash), allowlist, training.
  {
    kind: 'agent', table: 'agents', key: ['chat_id'], erase: 'update', staff: true, columns: { chat_id: 'chat', name: { of: 'chat_id' } },
    sql: `select a.*, a.chat_id as _id, a.created_at as _at from agents a where a.chat_id = $1::text`,
  },
  {
    kind: 'sessions', table: 'sessions', key: ['token_hash'], erase: 'delete', staff: true, columns: {},
    sql: `select s.chat_id, s.created_at, s.expires_at, left(s.token_hash, 12) as _id, s.created_at as _at
          from sessions s where s.chat_id = $1::text order by s.created_at`,
  },
  {
    kind: 'admin_allowlist', table: 'admin_allowlist', key: ['chat_id'], erase: 'update', staff: true, columns: { chat_id: 'chat', granted_by: 'chat' },
    sql: `select l.*, l.chat_id as _id, l.created_at as _at from admin_allowlist l where l.chat_id = $1::text or l.granted_by = $1::text order by l.chat_id`,
  },
  {
    kind: 'training_memberships', table: 'training_session_members', key: ['session_id', 'role'], erase: 'update', staff: true, columns: { chat_id: 'chat' },
    sql: `select m.*, m.session_id || '/' || m.role as _id, m.created_at as _at from training_session_members m where m.chat_id = $1::text order by m.session_id`,
  },
  {
    kind: 'training_evaluations', table: 'training_sessions', key: ['id'], erase: 'update', staff: true,
    columns: { evaluated_by: 'chat', comments: 'text', released_feedback: 'text' },
    sql: `select s.*, s.id::text as _id, s.evaluated_at as _at from training_sessions s where s.evaluated_by = $1::text order by s.id`,
  },
  {
    kind: 'training_injections', table: 'training_injections', key: ['id'], erase: 'update', staff: true, columns: { created_by: 'chat', content: { of: 'created_by' } },
    sql: `select i.*, i.id::text as _id, i.created_at as _at from training_injections i where i.created_by = $1::text order by i.id`,
  },
  {
    kind: 'training_notes', table: 'training_notes', key: ['id'], erase: 'update', staff: true, columns: { author_chat_id: 'chat', body: { of: 'author_chat_id' } },
    sql: `select n.*, n.id::text as _id, n.created_at as _at from training_notes n where n.author_chat_id = $1::text order by n.id`,
  },
];

/** Tables read without an index for one person: few rows by nature (one per agent, per training session). */
// idempotency_keys: at most IDEMPOTENCY_KEY_TTL_HOURS (a day) of answers, its bodies searched as text.
export const SMALL_TABLES: ReadonlySet<string> = new Set(['agents', 'admin_allowlist', 'training_sessions', 'training_injections', 'training_notes', 'idempotency_keys']);

/** Tables with text or jsonb columns that hold nothing naming a person, and why. */
export const NO_PERSONAL_DATA: Readonly<Record<string, string>> = {
  schema_migrations: 'migration names and checksums',
  report_counts: 'list totals by status',
  health_state: 'the overall health status',
  health_incidents: 'health status changes and section names',
  signing_keys: "the service's own secrets",
  read_positions: "a caller is a session token's hash or the bot; WAL positions, pruned within minutes",
  realtime_outbox: 'training broadcasts in transit, pruned after ten minutes (the events they carry are in events)',
  training_scenarios: 'fictional scenario definitions',
  training_session_scenarios: "a scenario's fictional definition and its run state (objective and evidence keys)",
  audit_chain: 'hashes of sealed rows',
  audit_chain_state: "the sealer's progress",
  audit_verifications: 'verify-audit results: counts, hashes and the row a problem names by id',
  audit_seal_salts: 'random salts and commitments of sealed personal fields, never the values',
  subject_erasures: 'an erasure names the person by pseudonym only',
  case_erasures: "a retention erasure names the case and counts rows, never a person",
  pseudonym_key_fingerprint: "an HMAC of a constant under the environment's pseudonym key: nothing of a person",
};

/** The kinds of the export document, in order. */
export const KINDS: readonly string[] = [...new Set(CATALOGUE.map((e) => e.kind))];
