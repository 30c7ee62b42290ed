-- GET /audit searches and sorts the canonical events in SQL (spec: Audit log). The search column
-- is derived from the row, so it can never drift from it; a trigram index serves `like '%term%'`.
alter table events add column search_text text generated always as (
  lower(
    type || ' ' || coalesce(report_id, '') || ' ' || coalesce(actor_name, '') || ' '
      || coalesce(before::text, '') || ' ' || coalesce(after::text, '') || ' ' || coalesce(data::text, '')
  )
) stored;

create index events_search_text_trgm_idx on events using gin (search_text gin_trgm_ops);

-- One index per sort order of GET /audit (newest and oldest use events_created_at_idx).
create index events_type_sort_idx on events (type, created_at desc, id desc);
create index events_actor_sort_idx on events (actor_name, created_at desc, id desc);
create index events_report_sort_idx on events (report_id, created_at desc, id desc);
create index events_supervisor_created_at_idx on events (is_supervisor, created_at desc, id desc);
