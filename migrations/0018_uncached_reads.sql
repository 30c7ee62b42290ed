-- Reads at scale without caches (issue 13). Nothing keeps report list pages or audit answers any
-- more, so nothing needs to hear that reports or events changed: the statement triggers of 0008
-- go, and with them a notifying commit (which serialises on PostgreSQL's notify lock) per write.
drop trigger reports_changed on reports;
drop trigger events_changed on events;
drop function notify_table_changed();

-- The list counters (0007) are kept per statement instead of per row: a statement changing many
-- reports updates each counter it touches once, so a bulk load no longer leaves a dead counter row
-- version per report behind. Transition tables need one trigger per operation.
drop trigger reports_counted on reports;
drop function count_reports();
drop function bump_report_count(text, boolean, boolean, integer);

-- Each branch names only the transition tables its own operation has (plpgsql plans a statement
-- when it first runs). Concurrent statements still spread over the 16 slots of 0007.
create function count_reports() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into report_counts (status, is_supervisor, contact_open, slot, n)
    select status, is_supervisor, contact_open, floor(random() * 16)::smallint, count(*)
    from new_rows group by 1, 2, 3
    on conflict (status, is_supervisor, contact_open, slot) do update set n = report_counts.n + excluded.n;
  elsif tg_op = 'DELETE' then
    insert into report_counts (status, is_supervisor, contact_open, slot, n)
    select status, is_supervisor, contact_open, floor(random() * 16)::smallint, -count(*)
    from old_rows group by 1, 2, 3
    on conflict (status, is_supervisor, contact_open, slot) do update set n = report_counts.n + excluded.n;
  else
    insert into report_counts (status, is_supervisor, contact_open, slot, n)
    select status, is_supervisor, contact_open, floor(random() * 16)::smallint, sum(delta)
    from (
      select status, is_supervisor, contact_open, 1 as delta from new_rows
      union all
      select status, is_supervisor, contact_open, -1 from old_rows
    ) changed
    group by 1, 2, 3
    having sum(delta) <> 0
    on conflict (status, is_supervisor, contact_open, slot) do update set n = report_counts.n + excluded.n;
  end if;
  return null;
end
$$;

create trigger reports_counted_insert after insert on reports
  referencing new table as new_rows for each statement execute function count_reports();
create trigger reports_counted_update after update on reports
  referencing old table as old_rows new table as new_rows for each statement execute function count_reports();
create trigger reports_counted_delete after delete on reports
  referencing old table as old_rows for each statement execute function count_reports();

-- A counter row is updated by every report a writer creates. Room on each page lets those updates
-- stay on the page (HOT: no index entry, pruned in place), and autovacuum visits the table after a
-- few thousand dead versions rather than after a fifth of a table this small.
alter table report_counts set (fillfactor = 30, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000);

-- Filtered list pages (src/reports/list.ts) walk one branch per (status, type) in the list's
-- order and merge them, reading at most offset + limit keys from each branch, whatever the
-- filters match. The include column keeps the contact filter an index-only check.
drop index reports_status_created_at_idx;
create index reports_status_type_created_at_idx on reports (status, is_supervisor, created_at desc, report_id desc) include (contact_open);
create index reports_status_type_updated_at_idx on reports (status, is_supervisor, updated_at desc, report_id desc) include (contact_open);
-- The type filter alone: one walk in the list's order over the chosen type.
drop index reports_supervisor_created_at_idx;
create index reports_supervisor_created_at_idx on reports (is_supervisor, created_at desc, report_id desc) include (status, contact_open);
create index reports_supervisor_updated_at_idx on reports (is_supervisor, updated_at desc, report_id desc) include (status, contact_open);
