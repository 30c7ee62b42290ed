-- Issue 32, retention (src/admin/retention, RETENTION_DAYS): each closed case whose personal data
-- was erased for its age, one row per erasure. A case is one life of a report (report_id,
-- creation_order: migration 0025); closed_at is the report's updated_at the erasure saw, so a case
-- reopened and closed again after it is erased again once that closing is old enough. It names
-- the case and counts only, never a person.
create table case_erasures (
  id bigint generated always as identity primary key,
  report_id text not null,
  report_life bigint not null,
  closed_at timestamptz not null,
  reference text not null check (char_length(reference) between 1 and 200),
  counts jsonb not null check (jsonb_typeof(counts) = 'object'),
  correlation_id text not null,
  erased_at timestamptz not null default now()
);
create index case_erasures_case_idx on case_erasures (report_id, report_life, closed_at);

-- The retention's candidates: closed reports by the time of their last change.
create index reports_closed_updated_idx on reports (updated_at, report_id) where status in ('Validated', 'Invalidated');
