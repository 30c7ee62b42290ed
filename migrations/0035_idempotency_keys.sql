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
  created_at timestamptz not null default now(),
  primary key (scope, key)
);
create index idempotency_keys_created_at_idx on idempotency_keys (created_at);
