-- Rows belong to a report's life, not to its id (issue 29). A report id may be used again once its
-- report is deleted; nothing of the deleted report may then hang off the new one.
--
-- A report's life is its row: (report_id, creation_order), creation_order an identity that is never
-- reused. Working data (notes, evidence, contact thread and messages, queue items) already
-- references the live row and is removed with it (on delete cascade). Two kinds of rows outlive
-- their report, and now say which life they belong to, in the schema:
--   report_timeline  kept after deletion (spec: Timeline entry): while the report lives, report_life
--                    references its row; writing the report's pre-image (deleted_reports) hands the
--                    rows to it (deleted_report), and the foreign key's action clears report_life
--                    when the row goes. Every row belongs to one or the other (checked at commit).
--   punishments      stand after their report is deleted: report_id is cleared as before, and
--                    deleted_report keeps which deleted report (and so which flag) they cited.
--
-- The database does the bookkeeping (triggers), so the statements that write a timeline row or a
-- pre-image are the same as before: the release before this one runs unchanged on this schema
-- (rolling upgrades, docs/decisions.md).
-- upgrade-safe add-constraint: reports_life_key holds for any rows (creation_order is unique alone), and the foreign key binds only report_life, which the release before never writes and the triggers below fill with the live report's
--
-- Timeline rows written before this migration are given to the life they were written in: the live
-- report if they are not older than it, else the deletion that ended theirs. Rows of a report
-- removed outside the service match neither and stay as they are: the check applies to rows
-- written or changed from now on.
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
    references reports (report_id, creation_order) on delete set null (report_life);
create index report_timeline_deleted_idx on report_timeline (deleted_report, created_at, id) where deleted_report is not null;

-- The visibility model's probe of deleted reports (src/platform/auth/report-access.ts): index-only,
-- over the reports deleted while flagged alone.
create index deleted_reports_flagged_idx on deleted_reports (report_id) where (pre_image ->> 'is_supervisor')::boolean;

alter table punishments add column deleted_report bigint references deleted_reports (id);
create index punishments_deleted_report_idx on punishments (deleted_report) where deleted_report is not null;

-- A new timeline row belongs to the report of its id that lives now, else to the deletion of that
-- id written last (the "Report deleted" entry, written after the row is gone).
create function report_timeline_life() returns trigger language plpgsql as $$
begin
  if new.report_life is null and new.deleted_report is null then
    select creation_order into new.report_life from reports where report_id = new.report_id;
    if new.report_life is null then
      select id into new.deleted_report from deleted_reports where report_id = new.report_id order by id desc limit 1;
    end if;
  end if;
  return new;
end $$;
create trigger report_timeline_life before insert on report_timeline
  for each row execute function report_timeline_life();

-- Writing a report's pre-image hands it what outlives the report: its timeline and the punishments
-- citing it. The report row is deleted next, in the same transaction.
create function deleted_report_handover() returns trigger language plpgsql as $$
begin
  update report_timeline t set deleted_report = new.id
    from reports r where r.report_id = new.report_id and t.report_id = r.report_id and t.report_life = r.creation_order;
  update punishments set deleted_report = new.id where report_id = new.report_id;
  return null;
end $$;
create trigger deleted_report_handover after insert on deleted_reports
  for each row execute function deleted_report_handover();

-- At commit, every timeline row written or changed in the transaction belongs to a life: a report
-- deleted without its pre-image (outside the service) is refused, whatever order its statements
-- came in. Only rows left without either link are queued for the check.
create function report_timeline_belongs() returns trigger language plpgsql as $$
begin
  if exists (select 1 from report_timeline where id = new.id and report_life is null and deleted_report is null) then
    raise exception 'report_timeline_belongs: timeline row % of report % belongs to no report and no deleted report''s pre-image', new.id, new.report_id
      using errcode = '23514';
  end if;
  return null;
end $$;
create constraint trigger report_timeline_belongs after insert or update on report_timeline
  deferrable initially deferred
  for each row when (new.report_life is null and new.deleted_report is null)
  execute function report_timeline_belongs();
