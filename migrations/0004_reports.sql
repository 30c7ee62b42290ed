-- Reports (dockets) and everything that hangs off them: notes, evidence, the timeline, the contact
-- thread with the reporter, chat profile snapshots, the bot's report action queue, and the
-- forensic record kept when a report is deleted. Display statuses: docs/decisions.md.

create extension if not exists pg_trgm;

create table reports (
  report_id text primary key check (char_length(report_id) between 1 and 64),
  reporter text not null check (char_length(reporter) between 1 and 100),
  reported text not null check (char_length(reported) between 1 and 100),
  reason text not null check (char_length(reason) between 1 and 2000),
  notes text not null check (char_length(notes) <= 10000),
  evidence text not null check (char_length(evidence) <= 10000),
  reporter_name text check (char_length(reporter_name) <= 100),
  reported_name text check (char_length(reported_name) <= 100),
  status text not null default 'Open'
    check (status in ('Open', 'Under Investigation', 'Pending', 'Appealed', 'Validated', 'Invalidated')),
  assigned_agent text,
  is_supervisor boolean not null default false,
  thread_id text check (char_length(thread_id) <= 64),
  evidence_url text check (evidence_url ~* '^https?://' and char_length(evidence_url) <= 2000),
  investigation_started_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index reports_created_at_idx on reports (created_at desc, report_id desc);
create index reports_updated_at_idx on reports (updated_at desc, report_id desc);
create index reports_status_created_at_idx on reports (status, created_at desc, report_id desc);
create index reports_supervisor_created_at_idx on reports (is_supervisor, created_at desc, report_id desc);
create index reports_assigned_agent_idx on reports (assigned_agent) where assigned_agent is not null;

create table report_notes (
  id bigint generated always as identity primary key,
  report_id text not null references reports (report_id) on delete cascade,
  note text not null check (char_length(note) between 1 and 5000),
  author_kind text not null check (author_kind in ('agent', 'bot')),
  author_chat_id text,
  author_name text,
  created_at timestamptz not null default now()
);
create index report_notes_report_idx on report_notes (report_id, created_at);

create table report_evidence (
  id bigint generated always as identity primary key,
  report_id text not null references reports (report_id) on delete cascade,
  description text not null check (char_length(description) between 1 and 1000),
  url text not null check (url ~* '^https?://' and char_length(url) <= 2000),
  submitted_by text,
  created_at timestamptz not null default now()
);
create index report_evidence_created_at_idx on report_evidence (created_at desc, id desc);
create index report_evidence_report_idx on report_evidence (report_id, created_at);

-- Kept when the report is deleted (spec: Timeline entry), hence no foreign key.
create table report_timeline (
  id bigint generated always as identity primary key,
  report_id text not null,
  event text not null check (char_length(event) between 1 and 2000),
  actor_kind text not null check (actor_kind in ('agent', 'bot', 'system')),
  actor_chat_id text,
  actor_name text,
  created_at timestamptz not null default now()
);
create index report_timeline_report_idx on report_timeline (report_id, created_at, id);

create table contact_threads (
  report_id text primary key references reports (report_id) on delete cascade,
  closed boolean not null default false,
  closed_at timestamptz,
  closed_by text,
  closed_by_name text,
  created_at timestamptz not null default now()
);
create index contact_threads_open_idx on contact_threads (report_id) where not closed;

create table contact_messages (
  id bigint generated always as identity primary key,
  report_id text not null references contact_threads (report_id) on delete cascade,
  direction text not null check (direction in ('to_reporter', 'from_reporter')),
  body text not null check (char_length(body) between 1 and 4000),
  sender_chat_id text,
  sender_name text check (char_length(sender_name) <= 100),
  created_at timestamptz not null default now()
);
create index contact_messages_report_idx on contact_messages (report_id, created_at, id);

-- One snapshot per chat id, upserted by the bot (spec: Chat profile snapshot).
create table chat_profiles (
  chat_id text primary key check (chat_id ~ '^[0-9]{1,20}$'),
  username text,
  global_name text,
  avatar text,
  profile jsonb not null default '{}',
  updated_at timestamptz not null default now()
);

-- The bot's report action queue. Claims are one statement with `for update skip locked` over
-- the partial index on pending rows, oldest first, per queue.
create table report_actions (
  action_id bigint generated always as identity primary key,
  report_id text not null references reports (report_id) on delete cascade,
  kind text not null
    check (kind in ('claim', 'investigate', 'validate', 'invalidate', 'contact_reporter', 'contact_message', 'contact_closed')),
  queue text not null check (queue in ('operator', 'supervisor')),
  status text not null default 'pending' check (status in ('pending', 'processing', 'success', 'failed', 'cancelled')),
  payload jsonb not null default '{}',
  attempts integer not null default 0,
  result_note text,
  last_error text,
  requested_by text,
  claimed_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index report_actions_claim_idx on report_actions (queue, created_at, action_id) where status = 'pending';
create index report_actions_pending_any_idx on report_actions (created_at, action_id) where status = 'pending';
create index report_actions_processing_idx on report_actions (claimed_at) where status = 'processing';
create index report_actions_status_idx on report_actions (status, queue, created_at desc);
create index report_actions_report_idx on report_actions (report_id);

-- The pre-image of every deleted report, with who deleted it and why (the forensic record).
create table deleted_reports (
  id bigint generated always as identity primary key,
  report_id text not null,
  pre_image jsonb not null,
  reason text not null check (char_length(reason) between 1 and 500),
  deleted_by_kind text not null check (deleted_by_kind in ('agent', 'bot')),
  deleted_by_chat_id text,
  correlation_id text not null,
  deleted_at timestamptz not null default now()
);
create index deleted_reports_report_idx on deleted_reports (report_id);
