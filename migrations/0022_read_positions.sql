-- Read replicas with read-your-writes (issue 22, src/platform/db/replicas.ts): each caller's
-- latest change as a WAL position on the primary. A caller is a session (by its token's hash) or
-- the bot's key. Unlogged: it is read on the primary only, and after a crash it starts empty (a
-- position lost then only makes a read wait for a replica that has replayed everything anyway, or
-- go to the primary). Rows older than a few minutes are deleted by the service.
create unlogged table read_positions (
  caller text primary key,
  lsn pg_lsn not null,
  updated_at timestamptz not null default now()
);
