-- Health history (spec: System administration, GET /admin/health; Resources, "Health history
-- entry"): one incident per change of the overall status, recorded exactly once however many
-- instances compute health at the same moment. health_state is the status last recorded, a single
-- row; a computation records by one compare-and-set update on it (src/admin/health-queries.ts):
-- concurrent updates queue on the row lock and re-check `status <> new` after the wait, so only
-- the first of them changes anything and inserts the incident.
create table health_state (
  id boolean primary key default true check (id),
  status text not null check (status in ('ok', 'warn', 'error')),
  -- The status before the last change: the update sets it from the row it locked, so the incident
  -- names the status it really replaced, not the one its snapshot saw.
  previous_status text check (previous_status in ('ok', 'warn', 'error')),
  -- When the measurement that recorded the change was read (the database's clock): a measurement
  -- read earlier than this cannot undo the change.
  changed_at timestamptz not null default now()
);
insert into health_state (status) values ('ok');

create table health_incidents (
  id bigint generated always as identity primary key,
  status_before text not null check (status_before in ('ok', 'warn', 'error')),
  status_after text not null check (status_after in ('ok', 'warn', 'error')),
  -- The sections that were not ok, by name: {"actions": "warn", "database": "error"}.
  sections jsonb not null default '{}',
  correlation_id text not null,
  created_at timestamptz not null default now(),
  check (status_before <> status_after)
);
create index health_incidents_created_at_idx on health_incidents (created_at desc, id desc);
