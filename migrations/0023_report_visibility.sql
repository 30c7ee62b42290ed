-- Who sees what of a report is decided from the report's current state at read time (issue 28,
-- src/platform/auth/report-access.ts), never from a flag copied into a row when it was written.

-- A report is flagged when its live row is, or when any deleted report of that id was (its
-- pre-image): a report deleted while flagged keeps its rows hidden even if the id is reused.
-- A single scalar select: the planner inlines it into the queries that call it, and each call is
-- an index probe of reports' primary key and of deleted_reports_report_idx.
create function report_flagged(p_report_id text) returns boolean
language sql stable parallel safe as $$
  select coalesce((select r.is_supervisor from reports r where r.report_id = p_report_id), false)
      or coalesce((select bool_or((d.pre_image ->> 'is_supervisor')::boolean) from deleted_reports d where d.report_id = p_report_id), false)
$$;

-- A person is a party of a flagged report: their stored chat profile is then theirs to see only
-- for those who may see that report. Partial indexes: flagged reports are the few.
create index reports_flagged_reporter_idx on reports (reporter) where is_supervisor;
create index reports_flagged_reported_idx on reports (reported) where is_supervisor;

create function party_of_flagged_report(p_chat_id text) returns boolean
language sql stable parallel safe as $$
  select exists (select 1 from reports r where r.is_supervisor and r.reporter = p_chat_id)
      or exists (select 1 from reports r where r.is_supervisor and r.reported = p_chat_id)
      or exists (select 1 from deleted_reports d
                 where (d.pre_image ->> 'is_supervisor')::boolean
                   and p_chat_id in (d.pre_image ->> 'reporter', d.pre_image ->> 'reported'))
$$;

-- The queue a report's waiting work is on follows the report's flag: when the flag changes, its
-- pending and processing actions move in the same transaction, whichever path changed it, so the
-- operator pickup never hands out a supervisor report's action.
create function report_actions_follow_flag() returns trigger
language plpgsql as $$
begin
  update report_actions
     set queue = case when new.is_supervisor then 'supervisor' else 'operator' end, updated_at = now()
   where report_id = new.report_id and status in ('pending', 'processing')
     and queue <> case when new.is_supervisor then 'supervisor' else 'operator' end;
  return null;
end
$$;

create trigger reports_flag_moves_actions after update of is_supervisor on reports
for each row when (old.is_supervisor is distinct from new.is_supervisor)
execute function report_actions_follow_flag();
