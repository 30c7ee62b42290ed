-- Totals for the paginated report list without counting a million rows per request. Each report
-- is counted under (status, is_supervisor, contact_open); triggers keep the counts in step with
-- every insert, update and delete, in the same transaction. Each change lands on one of 16 slots
-- chosen at random, so concurrent report creations do not queue on a single counter row.

-- Whether the report has an open contact thread, kept by the thread's own trigger below: the
-- list filters and counts on it without a join.
alter table reports add column contact_open boolean not null default false;
update reports r set contact_open = true where exists (select 1 from contact_threads c where c.report_id = r.report_id and not c.closed);
create index reports_contact_open_created_at_idx on reports (created_at desc, report_id desc) where contact_open;

create table report_counts (
  status text not null,
  is_supervisor boolean not null,
  contact_open boolean not null,
  slot smallint not null,
  n bigint not null,
  primary key (status, is_supervisor, contact_open, slot)
);

insert into report_counts (status, is_supervisor, contact_open, slot, n)
select status, is_supervisor, contact_open, 0, count(*) from reports group by status, is_supervisor, contact_open;

create function bump_report_count(p_status text, p_supervisor boolean, p_contact_open boolean, p_delta integer)
returns void language sql as $$
  insert into report_counts (status, is_supervisor, contact_open, slot, n)
  values (p_status, p_supervisor, p_contact_open, floor(random() * 16)::smallint, p_delta)
  on conflict (status, is_supervisor, contact_open, slot) do update set n = report_counts.n + excluded.n
$$;

create function count_reports() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    if tg_op = 'DELETE' or (old.status, old.is_supervisor, old.contact_open) is distinct from (new.status, new.is_supervisor, new.contact_open) then
      perform bump_report_count(old.status, old.is_supervisor, old.contact_open, -1);
    else
      return null;
    end if;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform bump_report_count(new.status, new.is_supervisor, new.contact_open, 1);
  end if;
  return null;
end
$$;

create trigger reports_counted after insert or update of status, is_supervisor, contact_open or delete on reports
  for each row execute function count_reports();

create function mark_contact_open() returns trigger language plpgsql as $$
begin
  -- On a cascade from a deleted report the report row is already gone: the update is a no-op.
  if tg_op = 'DELETE' then
    update reports set contact_open = false where report_id = old.report_id and contact_open;
  else
    update reports set contact_open = not new.closed where report_id = new.report_id and contact_open is distinct from not new.closed;
  end if;
  return null;
end
$$;

create trigger contact_threads_mark_open after insert or update of closed or delete on contact_threads
  for each row execute function mark_contact_open();
