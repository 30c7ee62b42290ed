-- Idempotency-Key (issue 41, src/platform/http/idempotency.ts): the answer to a request that
-- carried the header, written in the same transaction as the request's change, so that a client's
-- retry after a lost answer gets it instead of a second change. The scope is the principal (the
-- bot's key, `key`, or `agent:<chat_id>`); the database is the environment's. Kept for
-- IDEMPOTENCY_KEY_TTL_HOURS, then swept. Bodies hold what the principal was answered, personal
-- data included: a subject erasure deletes the stored answers that name the person.
create table idempotency_keys (
  scope text not null,
  key text not null check (char_length(key) between 1 and 255),
  fingerprint text not null,
  status integer not null check (status between 100 and 499),
  content_type text not null,
  body text,
  -- The reports the request and its answer name: a replay to a principal who may no longer see
  -- one of them (flagged since) is refused as a new request would be.
  report_ids text[] not null default '{}',
  created_at timestamptz not null default now(),
  primary key (scope, key)
);
create index idempotency_keys_created_at_idx on idempotency_keys (created_at);

-- The key taken and looked up in one round trip: the advisory lock on (scope, key), tried and
-- never waited for (in_use when another request holds it), then the answer kept for the key. The
-- lookup is a statement of its own in a VOLATILE function, so in READ COMMITTED its snapshot is
-- taken once the lock is held: it sees the answer of a request with the key that committed while
-- this one was asking for the lock.
create function idempotency_begin(p_scope text, p_key text, p_ttl_hours integer)
returns table (in_use boolean, fingerprint text, status integer, content_type text, body text, report_ids text[])
language plpgsql volatile as $$
begin
  if not pg_try_advisory_xact_lock(hashtextextended(p_scope || E'\n' || p_key, 41)) then
    return query select true, null::text, null::integer, null::text, null::text, null::text[];
    return;
  end if;
  return query select false, k.fingerprint, k.status, k.content_type, k.body, k.report_ids from idempotency_keys k
    where k.scope = p_scope and k.key = p_key and k.created_at > now() - make_interval(hours => p_ttl_hours);
  if not found then
    return query select false, null::text, null::integer, null::text, null::text, null::text[];
  end if;
end $$;
