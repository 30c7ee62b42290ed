-- Whenever a bot queue may have gained something to hand out (an item became pending, or a
-- punishment's expiry may have moved), `cms_queue_changed` is notified on commit, so every
-- instance drops what it knows about idle queues (src/queue/idle.ts). Row triggers with WHEN
-- conditions: claims and completions (the hot path) are filtered out before any function runs,
-- and PostgreSQL folds identical notifications of one transaction into one.
create function notify_queue_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('cms_queue_changed', tg_table_name);
  return null;
end
$$;

create trigger report_actions_enqueued after insert on report_actions
  for each row execute function notify_queue_changed();
create trigger report_actions_requeued after update of status on report_actions
  for each row when (new.status = 'pending' and old.status <> 'pending') execute function notify_queue_changed();
create trigger discipline_enqueued after insert on discipline_deliveries
  for each row execute function notify_queue_changed();
create trigger discipline_requeued after update of status, available_at on discipline_deliveries
  for each row when (new.status = 'pending') execute function notify_queue_changed();
create trigger punishments_expiry_changed after insert or update of expires_at, status on punishments
  for each row execute function notify_queue_changed();
