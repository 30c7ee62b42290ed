-- Punishments and the discipline delivery queue (spec: Punishments and discipline; States and
-- transitions, Punishment and Discipline delivery item). Statuses in docs/decisions.md.

create table punishments (
  punishment_id text primary key check (punishment_id ~ '^[A-Z]{2}[0-9][A-Z]{2}[0-9]$'),
  user_id text not null check (user_id ~ '^[0-9]{1,20}$'),
  username text check (char_length(username) <= 100),
  reason text not null check (char_length(reason) between 1 and 2000),
  detailed_reason text check (char_length(detailed_reason) <= 10000),
  duration text check (char_length(duration) <= 64),
  expires_at timestamptz,
  status text not null default 'Active' check (status in ('Active', 'Appealed', 'Expired', 'Revoked')),
  evidence text check (char_length(evidence) <= 10000),
  notes text check (char_length(notes) <= 10000),
  -- Checked at creation; a report deleted later leaves the punishment standing.
  report_id text references reports (report_id) on delete set null,
  issued_by text,
  issued_by_name text,
  revoked_at timestamptz,
  revoked_by text,
  revoke_reason text,
  expired_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((status = 'Revoked') = (revoked_at is not null)),
  check ((status = 'Expired') = (expired_at is not null))
);
create index punishments_created_idx on punishments (created_at desc, punishment_id desc);
create index punishments_user_idx on punishments (user_id, created_at desc);
create index punishments_status_idx on punishments (status, created_at desc);
create index punishments_report_idx on punishments (report_id) where report_id is not null;
-- The expiry sweep reads only punishments still in force with an expiry: a handful of rows.
create index punishments_due_idx on punishments (expires_at) where status in ('Active', 'Appealed') and expires_at is not null;

-- The bot's discipline queue. `issue`, `revoke` and `expire` carry a punishment to the chat
-- platform; `user_lookup` asks the bot to capture a user's profile. available_at paces retries.
create table discipline_deliveries (
  item_id bigint generated always as identity primary key,
  kind text not null check (kind in ('issue', 'revoke', 'expire', 'user_lookup')),
  punishment_id text references punishments (punishment_id) on delete cascade,
  user_id text not null check (user_id ~ '^[0-9]{1,20}$'),
  surface text not null default 'chat' check (surface in ('chat')),
  status text not null default 'pending' check (status in ('pending', 'processing', 'success', 'failed', 'cancelled')),
  attempts integer not null default 0,
  available_at timestamptz not null default now(),
  result_note text check (char_length(result_note) <= 2000),
  last_error text check (char_length(last_error) <= 2000),
  ref text check (char_length(ref) <= 200),
  requested_by text,
  claimed_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((kind = 'user_lookup') = (punishment_id is null))
);
create index discipline_claim_idx on discipline_deliveries (available_at, item_id) where status = 'pending';
create index discipline_processing_idx on discipline_deliveries (claimed_at) where status = 'processing';
create index discipline_status_idx on discipline_deliveries (status, created_at, item_id);
create index discipline_punishment_idx on discipline_deliveries (punishment_id, item_id desc) where punishment_id is not null;
-- Exactly once, whatever races: one delivery of each punishment kind per punishment (requeues
-- reuse the row), and one outstanding lookup per user.
create unique index discipline_once_per_punishment_idx on discipline_deliveries (punishment_id, kind) where punishment_id is not null;
create unique index discipline_one_open_lookup_idx on discipline_deliveries (user_id) where kind = 'user_lookup' and status in ('pending', 'processing');

-- Past the retry cap, pending items are failed by the sweep; this index keeps that part of every
-- pickup's sweep an empty index probe.
create index report_actions_over_cap_idx on report_actions (action_id) where status = 'pending' and attempts >= 3;
create index discipline_over_cap_idx on discipline_deliveries (item_id) where status = 'pending' and attempts >= 3;
