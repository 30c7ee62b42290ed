-- The admin audit list (GET /admin/audit) filters by actor, action or target and reads newest
-- first with the id as tie-break: one index per filter in that order, so a page is an index range.
drop index audit_log_target_idx;
drop index audit_log_actor_idx;
create index audit_log_target_idx on audit_log (target, created_at desc, id desc);
create index audit_log_actor_idx on audit_log (actor_chat_id, created_at desc, id desc);
create index audit_log_action_idx on audit_log (action, created_at desc, id desc);
