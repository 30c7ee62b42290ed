-- Training broadcasts travel to every instance's realtime hub as NOTIFY payloads (issue 12). A
-- payload is at most 8000 bytes; a larger batch is stored here and its id notified instead, so no
-- event is dropped for its size. Rows are read within moments and pruned after ten minutes.
create table realtime_outbox (
  id bigint generated always as identity primary key,
  messages jsonb not null check (jsonb_typeof(messages) = 'array'),
  created_at timestamptz not null default now()
);
create index realtime_outbox_created_at_idx on realtime_outbox (created_at);
