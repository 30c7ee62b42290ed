-- The paginated list finds a page's keys first and fetches its 50 rows after (src/reports/list.ts).
-- The sort indexes carry the filter columns, so that walk is an index-only scan: it skips the rows
-- a filter rejects, and the rows before the offset, without reading the table.
drop index reports_created_at_idx;
create index reports_created_at_idx on reports (created_at desc, report_id desc) include (status, is_supervisor, contact_open);
drop index reports_updated_at_idx;
create index reports_updated_at_idx on reports (updated_at desc, report_id desc) include (status, is_supervisor, contact_open);
