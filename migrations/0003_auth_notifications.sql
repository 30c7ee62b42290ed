-- Every change that can alter what a session resolves to (its agent row, the session itself, the
-- agent's allowlist entry) notifies `cms_auth_changed` with the agent's chat id, on commit, so
-- every instance can drop what it cached for that agent (src/platform/auth/session-cache.ts).
create function notify_auth_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('cms_auth_changed', case when tg_op = 'DELETE' then old.chat_id else new.chat_id end);
  if tg_op = 'UPDATE' and new.chat_id is distinct from old.chat_id then
    perform pg_notify('cms_auth_changed', old.chat_id);
  end if;
  return null;
end
$$;

create trigger agents_auth_changed after update or delete on agents
  for each row execute function notify_auth_changed();
create trigger sessions_auth_changed after update or delete on sessions
  for each row execute function notify_auth_changed();
create trigger admin_allowlist_auth_changed after insert or update or delete on admin_allowlist
  for each row execute function notify_auth_changed();
