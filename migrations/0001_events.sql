-- The canonical event log (spec: Events). Every state change writes one row here in the same
-- transaction as the change itself; rows are never updated or deleted, not even with the report.
create table events (
  id bigint generated always as identity primary key,
  type text not null,
  actor_kind text not null check (actor_kind in ('agent', 'bot', 'system')),
  actor_chat_id text,
  actor_name text,
  report_id text,
  before jsonb,
  after jsonb,
  data jsonb,
  correlation_id text not null,
  is_supervisor boolean not null default false,
  created_at timestamptz not null default now(),
  constraint events_agent_has_chat_id check ((actor_kind = 'agent') = (actor_chat_id is not null))
);

create index events_created_at_idx on events (created_at desc, id desc);
create index events_report_id_idx on events (report_id, created_at desc) where report_id is not null;
create index events_type_idx on events (type, created_at desc);
create index events_correlation_id_idx on events (correlation_id);
