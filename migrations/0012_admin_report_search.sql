-- GET /admin/reports searches a report's id, people, their names and the reason for a substring.
-- An expression index (not a stored column: list pages read every report row and should not carry
-- a second copy of the reason) through one immutable function that the query calls identically.
create function report_search_text(report_id text, reporter text, reported text, reporter_name text, reported_name text, reason text)
returns text language sql immutable parallel safe
return lower(report_id || ' ' || reporter || ' ' || reported || ' ' || coalesce(reporter_name, '') || ' ' || coalesce(reported_name, '') || ' ' || reason);

create index reports_admin_search_trgm_idx on reports
  using gin (report_search_text(report_id, reporter, reported, reporter_name, reported_name, reason) gin_trgm_ops);
