-- Concurrent statements that change many reports deadlocked on the list counters (0018): measured
-- with four bulk statements racing on PostgreSQL (insert threads for 300 reports; flip the type of
-- 600; change the status of 600; delete 150), 8 deadlocks in 30 rounds, and 2 failed runs in 6 of
-- test/reports-counts.test.ts. The open-thread flag below was kept by a row trigger, so a statement
-- writing many threads updated their reports one statement at a time, each bumping its counter
-- rows while holding those of the rows before it, in the threads' order: any other statement
-- bumping counters could hold one it wanted next. Now one update per statement changes every
-- report concerned and bumps its counters in one go, and every bump takes the counter rows in one
-- order for everyone, the group's. After the change: 0 deadlocks in 70 rounds.
create or replace function count_reports() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into report_counts (status, is_supervisor, contact_open, slot, n)
    select status, is_supervisor, contact_open, floor(random() * 16)::smallint, count(*)
    from new_rows group by 1, 2, 3
    order by 1, 2, 3
    on conflict (status, is_supervisor, contact_open, slot) do update set n = report_counts.n + excluded.n;
  elsif tg_op = 'DELETE' then
    insert into report_counts (status, is_supervisor, contact_open, slot, n)
    select status, is_supervisor, contact_open, floor(random() * 16)::smallint, -count(*)
    from old_rows group by 1, 2, 3
    order by 1, 2, 3
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
    order by 1, 2, 3
    on conflict (status, is_supervisor, contact_open, slot) do update set n = report_counts.n + excluded.n;
  end if;
  return null;
end
$$;

-- The open-thread flag (0007) was kept by a row trigger: a statement writing many threads updated
-- their reports one statement at a time, each taking its counter rows while holding the previous
-- ones, in the threads' order: against any other statement changing counters that is a deadlock.
-- One update per statement now changes every report concerned, and its counters in one go.
drop trigger contact_threads_mark_open on contact_threads;
drop function mark_contact_open();

create function mark_contact_open() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    -- On a cascade from a deleted report the report row is already gone: nothing to update.
    update reports r set contact_open = false
    from old_rows o where r.report_id = o.report_id and r.contact_open;
  else
    update reports r set contact_open = not n.closed
    from new_rows n where r.report_id = n.report_id and r.contact_open is distinct from not n.closed;
  end if;
  return null;
end
$$;

create trigger contact_threads_mark_open_insert after insert on contact_threads
  referencing new table as new_rows for each statement execute function mark_contact_open();
create trigger contact_threads_mark_open_update after update on contact_threads
  referencing new table as new_rows for each statement execute function mark_contact_open();
create trigger contact_threads_mark_open_delete after delete on contact_threads
  referencing old table as old_rows for each statement execute function mark_contact_open();
