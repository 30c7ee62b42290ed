-- Issue 32: what is held about a person is found through indexes (src/admin/subjects/catalogue.ts):
-- every column that names a person by chat id on a table that grows with the organisation's work
-- gets one, so an export or erasure of one person reads a few index ranges, not the tables. Partial
-- where the column is mostly null (staff columns, bot-written rows).
create index reports_reporter_idx on reports (reporter);
create index reports_reported_idx on reports (reported);
create index report_notes_author_idx on report_notes (author_chat_id) where author_chat_id is not null;
create index report_evidence_submitted_by_idx on report_evidence (submitted_by) where submitted_by is not null;
create index report_timeline_actor_idx on report_timeline (actor_chat_id) where actor_chat_id is not null;
create index contact_threads_closed_by_idx on contact_threads (closed_by) where closed_by is not null;
create index contact_messages_sender_idx on contact_messages (sender_chat_id) where sender_chat_id is not null;
create index report_actions_requested_by_idx on report_actions (requested_by) where requested_by is not null;
create index punishments_issued_by_idx on punishments (issued_by) where issued_by is not null;
create index punishments_revoked_by_idx on punishments (revoked_by) where revoked_by is not null;
create index discipline_user_idx on discipline_deliveries (user_id);
create index discipline_requested_by_idx on discipline_deliveries (requested_by) where requested_by is not null;
create index deleted_reports_reporter_idx on deleted_reports ((pre_image ->> 'reporter'));
create index deleted_reports_reported_idx on deleted_reports ((pre_image ->> 'reported'));
create index deleted_reports_deleted_by_idx on deleted_reports (deleted_by_chat_id) where deleted_by_chat_id is not null;
create index events_actor_chat_id_idx on events (actor_chat_id) where actor_chat_id is not null;

-- Chat ids inside an admin audit row's reason and before/after (a report corrected, an agent
-- changed): a trigram index over one immutable expression, as GET /audit searches events through
-- events.search_text (0005); the lookup confirms each candidate on the row itself.
create function audit_log_search_text(reason text, before jsonb, after jsonb)
returns text language sql immutable parallel safe
return lower(coalesce(reason, '') || ' ' || coalesce(before::text, '') || ' ' || coalesce(after::text, ''));

create index audit_log_search_text_trgm_idx on audit_log using gin (audit_log_search_text(reason, before, after) gin_trgm_ops);

-- Each erasure (POST /admin/subjects/<chat_id>/erase, `cli subject-erase`): who, when, why, under
-- which reference, and how many rows of each table it changed. It names the person by pseudonym
-- only, which is also how a second erasure of the same person finds the first.
create table subject_erasures (
  id bigint generated always as identity primary key,
  pseudonym text not null unique check (pseudonym ~ '^0[0-9]{19}$'),
  reason text not null check (char_length(reason) between 1 and 500),
  reference text not null check (char_length(reference) between 1 and 200),
  actor_kind text not null check (actor_kind in ('agent', 'operator')),
  actor_chat_id text,
  counts jsonb not null check (jsonb_typeof(counts) = 'object'),
  correlation_id text not null,
  erased_at timestamptz not null default now()
);
