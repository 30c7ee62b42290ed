-- Who sees what of a report is decided from the report's current state at read time (issue 28,
-- src/platform/auth/report-access.ts), never from a flag copied into a row when it was written.

-- A report is flagged when its live row is, or when a deleted report of that id was (its
-- pre-image): src/platform/auth/report-access.ts asks it as NOT EXISTS probes that the planner
-- turns into anti-joins. Flagged reports are the few: partial indexes keep each probe an
-- index-only lookup, by id and by party (a stored chat profile of a party of a flagged report is
-- withheld like the report).
create index reports_flagged_idx on reports (report_id) where is_supervisor;
create index reports_flagged_reporter_idx on reports (reporter) where is_supervisor;
create index reports_flagged_reported_idx on reports (reported) where is_supervisor;

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
