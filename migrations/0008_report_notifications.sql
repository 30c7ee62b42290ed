-- Any change to reports (which also covers report_counts and the open-thread flag, both kept by
-- triggers on reports) notifies `cms_reports_changed` on commit, once per statement, and any
-- change to the event log `cms_events_changed`, so every instance can drop the report list pages
-- and audit answers it keeps (src/platform/cache/change-cache.ts). The channel is the trigger's
-- argument.
create function notify_table_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify(tg_argv[0], '');
  return null;
end
$$;

create trigger reports_changed after insert or update or delete or truncate on reports
  for each statement execute function notify_table_changed('cms_reports_changed');

create trigger events_changed after insert or update or delete or truncate on events
  for each statement execute function notify_table_changed('cms_events_changed');
