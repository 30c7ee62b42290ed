-- A report's bot actions follow its supervisor flag in every state (issue 38), not only while
-- pending or processing: an action that failed before its report was flagged is the supervisor
-- queue's, so its requeue is (and a requeue decides from the report's flag as it is now, too).
create or replace function report_actions_follow_flag() returns trigger
language plpgsql as $$
begin
  update report_actions
     set queue = case when new.is_supervisor then 'supervisor' else 'operator' end,
         -- Finished actions keep their time: history is moved, not rewritten.
         updated_at = case when status in ('pending', 'processing') then now() else updated_at end
   where report_id = new.report_id
     and queue <> case when new.is_supervisor then 'supervisor' else 'operator' end;
  return null;
end
$$;

-- Actions that stayed behind a flag change before this migration.
update report_actions a
   set queue = case when r.is_supervisor then 'supervisor' else 'operator' end
  from reports r
 where r.report_id = a.report_id
   and a.queue <> case when r.is_supervisor then 'supervisor' else 'operator' end;
