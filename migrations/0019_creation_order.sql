-- Lists "newest first" break ties on a timestamp by creation order (issue 20). Agents, reports and
-- punishments are keyed by ids their callers choose or draw at random, so nothing in the row said
-- which of two rows created in the same instant came first (PGlite's clock has millisecond
-- resolution, so that happens). An identity column records it. Rows already stored are numbered in
-- the table's physical order by the rewrite: that matters only among rows sharing a timestamp,
-- whose order nothing recorded before. On PostgreSQL the rewrite and the index builds hold each
-- table's exclusive lock: about 45 s for 300,000 reports on the project machine, so a large
-- database is best migrated (`npm run cli -- migrate`) in a quiet hour.
alter table agents add column creation_order bigint generated always as identity;
alter table reports add column creation_order bigint generated always as identity;
alter table punishments add column creation_order bigint generated always as identity;

drop index agents_created_at_idx;
create index agents_created_at_idx on agents (created_at desc, creation_order desc);
drop index agents_status_idx;
create index agents_status_idx on agents (status, created_at desc, creation_order desc);

drop index punishments_created_idx;
create index punishments_created_idx on punishments (created_at desc, creation_order desc);
drop index punishments_user_idx;
create index punishments_user_idx on punishments (user_id, created_at desc, creation_order desc);
drop index punishments_status_idx;
create index punishments_status_idx on punishments (status, created_at desc, creation_order desc);

-- The report list's sort indexes (0017, 0018) in the new order. The page's walk returns report ids,
-- so the id moves into the include list and the walk stays an index-only scan.
drop index reports_created_at_idx;
create index reports_created_at_idx on reports (created_at desc, creation_order desc) include (report_id, status, is_supervisor, contact_open);
drop index reports_updated_at_idx;
create index reports_updated_at_idx on reports (updated_at desc, creation_order desc) include (report_id, status, is_supervisor, contact_open);
drop index reports_contact_open_created_at_idx;
create index reports_contact_open_created_at_idx on reports (created_at desc, creation_order desc) include (report_id) where contact_open;
drop index reports_status_type_created_at_idx;
create index reports_status_type_created_at_idx on reports (status, is_supervisor, created_at desc, creation_order desc) include (report_id, contact_open);
drop index reports_status_type_updated_at_idx;
create index reports_status_type_updated_at_idx on reports (status, is_supervisor, updated_at desc, creation_order desc) include (report_id, contact_open);
drop index reports_supervisor_created_at_idx;
create index reports_supervisor_created_at_idx on reports (is_supervisor, created_at desc, creation_order desc) include (report_id, status, contact_open);
drop index reports_supervisor_updated_at_idx;
create index reports_supervisor_updated_at_idx on reports (is_supervisor, updated_at desc, creation_order desc) include (report_id, status, contact_open);
