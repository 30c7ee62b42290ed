-- Rows belong to a report's life, not to its id (issue 29). A report id may be used again once its
-- report is deleted; nothing of the deleted report may then hang off the new one.
--
-- A report's life is its row: (report_id, creation_order), creation_order an identity that is never
-- reused. Working data (notes, evidence, contact thread and messages, queue items) already
-- references the live row and is removed with it (on delete cascade). Two kinds of rows outlive
-- their report, and now say which life they belong to, in the schema:
--   report_timeline  kept after deletion (spec: Timeline entry): while the report lives, report_life
--                    references its row; the deletion hands the rows to the deleted report's
--                    pre-image (deleted_report) before the row goes, and the foreign key's action
--                    then clears report_life. Every new row belongs to one or the other.
--   punishments      stand after their report is deleted: report_id is cleared as before, and
--                    deleted_report keeps which deleted report (and so which flag) they cited.
-- Timeline rows written before this migration are given to the life they were written in: the live
-- report if they are not older than it, else the deletion that ended theirs. Rows of a report
-- removed outside the service match neither and stay as they are (the check is NOT VALID: it holds
-- for every row written from now on).
alter table reports add constraint reports_life_key unique (report_id, creation_order);

alter table report_timeline
  add column report_life bigint,
  add column deleted_report bigint references deleted_reports (id);

update report_timeline t set report_life = r.creation_order
  from reports r where r.report_id = t.report_id and t.created_at >= r.created_at;
update report_timeline t set deleted_report = (
    select d.id from deleted_reports d
    where d.report_id = t.report_id and d.deleted_at >= t.created_at
    order by d.deleted_at, d.id limit 1)
  where t.report_life is null;

alter table report_timeline
  add constraint report_timeline_life_fkey foreign key (report_id, report_life)
    references reports (report_id, creation_order) on delete set null (report_life),
  add constraint report_timeline_belongs check (report_life is not null or deleted_report is not null) not valid;
create index report_timeline_deleted_idx on report_timeline (deleted_report, created_at, id) where deleted_report is not null;

alter table punishments add column deleted_report bigint references deleted_reports (id);
create index punishments_deleted_report_idx on punishments (deleted_report) where deleted_report is not null;
