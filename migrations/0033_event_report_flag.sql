-- Each event carries whether a report it is about is flagged now (issue 38): events.report_flagged
-- is the visibility model's answer for the event (src/platform/auth/report-access.ts), kept equal
-- to it by the transactions that change a flag, so an audit search reads a column of the row
-- where it probed two indexes for each candidate. It is not the flag the event was written with
-- (is_supervisor stays that history): when a report's flag changes, its events change with it in
-- the same transaction. The seal leaves the column out (hashes.ts), and the release before seals
-- the same rows the same way.
alter table events add column report_flagged boolean not null default false;

-- Which reports an event is about, as eventReportIds (report-access.ts) names them: its report id,
-- the report a punishment's before names when it moved to another, and the case a retention
-- erasure of 0.3.0 names in its target only.
create function event_report_ids(report_id text, before jsonb, type text, data jsonb) returns text[]
language sql immutable parallel safe as $$
  select array_remove(array[report_id, nullif(before ->> 'report_id', report_id),
                            case when type = 'admin.case_erased' and report_id is null then data ->> 'target' end], null)
$$;

-- A report of one of these ids is flagged: its live row, or a deleted report's pre-image (the
-- model's rule: rows that outlive a report stay as hidden as it was). Both probes index-only.
create function any_report_flagged(ids text[]) returns boolean
language sql stable parallel safe as $$
  select exists (select 1 from reports r where r.report_id = any(ids) and r.is_supervisor)
      or exists (select 1 from deleted_reports d where d.report_id = any(ids) and (d.pre_image ->> 'is_supervisor')::boolean)
$$;

-- The events whose column a flag change of the report `id` may change, by the three indexes.
create index events_before_report_idx on events ((before ->> 'report_id')) where (before ->> 'report_id') is not null;
create index events_case_erased_target_idx on events ((data ->> 'target')) where type = 'admin.case_erased' and report_id is null;

create function refresh_event_report_flags(flagged_report text) returns void language plpgsql as $$
begin
  -- Serialises with events being written for a report that has no live row (event_report_flag).
  perform pg_advisory_xact_lock(38, hashtext(flagged_report));
  update events e set report_flagged = f.flagged
    from (select x.id, any_report_flagged(event_report_ids(x.report_id, x.before, x.type, x.data)) as flagged
            from events x
           where x.id in (select y.id from events y where y.report_id = flagged_report
                          union select y.id from events y where (y.before ->> 'report_id') = flagged_report
                          union select y.id from events y
                                 where y.type = 'admin.case_erased' and y.report_id is null and (y.data ->> 'target') = flagged_report)) f
   where e.id = f.id and e.report_flagged is distinct from f.flagged;
end
$$;

-- A new event. Its reports' flags are read only once no transaction that changes one of them is
-- in flight: a flag changes under the report's row lock FOR UPDATE (the service's writes lock it
-- first; reports_flag_change_lock below for any other writer), which waits for this FOR KEY SHARE
-- and which it waits for, so either the flag's change sees this event and refreshes it, or this
-- event is written after the change and reads the new flag. A report id without a live row (a
-- deleted report's, or one being created) is taken under its advisory lock instead, which a flag
-- change takes too (refresh_event_report_flags). FOR KEY SHARE conflicts with no ordinary update
-- of the report, and is no lock at all for a writer that holds the row FOR UPDATE already.
create function event_report_flag() returns trigger language plpgsql as $$
declare
  ids text[] := event_report_ids(new.report_id, new.before, new.type, new.data);
  live text[];
begin
  if cardinality(ids) = 0 then
    new.report_flagged := false;
    return new;
  end if;
  select coalesce(array_agg(l.report_id), '{}') into live
    from (select r.report_id from reports r where r.report_id = any(ids) order by r.report_id for key share) l;
  perform pg_advisory_xact_lock_shared(38, hashtext(i)) from unnest(ids) i where i <> all(live) order by i;
  -- A statement of its own: its snapshot is taken after the locks were granted.
  new.report_flagged := any_report_flagged(ids);
  return new;
end
$$;

create trigger events_report_flag before insert on events
  for each row execute function event_report_flag();

-- A flag changed by an UPDATE that did not lock the row FOR UPDATE first: it takes that lock now,
-- before the row changes, so that it waits for the events being written about the report.
create function reports_flag_change_lock() returns trigger language plpgsql as $$
begin
  perform 1 from reports r where r.report_id = old.report_id for update;
  return new;
end
$$;

create trigger reports_flag_change_lock before update of is_supervisor, report_id on reports
  for each row when (old.is_supervisor is distinct from new.is_supervisor or old.report_id is distinct from new.report_id)
  execute function reports_flag_change_lock();

create function reports_flag_moves_events() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then perform refresh_event_report_flags(old.report_id); end if;
  if tg_op in ('UPDATE', 'INSERT') and (tg_op = 'INSERT' or new.report_id is distinct from old.report_id) then
    perform refresh_event_report_flags(new.report_id);
  end if;
  return null;
end
$$;

-- A report created flagged, deleted while flagged, or whose flag or id changed.
create trigger reports_flag_moves_events_insert after insert on reports
  for each row when (new.is_supervisor) execute function reports_flag_moves_events();
create trigger reports_flag_moves_events_delete after delete on reports
  for each row when (old.is_supervisor) execute function reports_flag_moves_events();
create trigger reports_flag_moves_events_update after update of is_supervisor, report_id on reports
  for each row when (old.is_supervisor is distinct from new.is_supervisor or old.report_id is distinct from new.report_id)
  execute function reports_flag_moves_events();

create function deleted_reports_flag_moves_events() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then perform refresh_event_report_flags(old.report_id); end if;
  if tg_op in ('UPDATE', 'INSERT') then perform refresh_event_report_flags(new.report_id); end if;
  return null;
end
$$;

-- A pre-image's flag counts as the live row's does (a deleted report's events stay hidden).
create trigger deleted_reports_flag_moves_events after insert or update or delete on deleted_reports
  for each row execute function deleted_reports_flag_moves_events();

-- The events written before: only the flagged ones change.
update events e set report_flagged = true
 where any_report_flagged(event_report_ids(e.report_id, e.before, e.type, e.data));
