-- Agents, browser sessions, sign-in state, the admin allowlist and the admin audit trail.

create table agents (
  chat_id text primary key check (chat_id ~ '^[0-9]{1,20}$'),
  name text check (char_length(name) <= 100),
  status text not null default 'onboarding' check (status in ('onboarding', 'active', 'suspended', 'inactive')),
  agent_rank text check (agent_rank in ('Agent', 'Senior Agent', 'Supervisor', 'Head Investigator', 'Director')),
  security_id text check (char_length(security_id) <= 64),
  agreement_id text check (char_length(agreement_id) <= 64),
  agent_id text check (char_length(agent_id) <= 64),
  clearance_id text check (char_length(clearance_id) <= 64),
  clearance_level smallint check (clearance_level between 1 and 5),
  is_trainer boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agents_created_at_idx on agents (created_at desc, chat_id);
create index agents_status_idx on agents (status, created_at desc);

-- Only a SHA-256 of the cookie token is stored: a leaked table does not yield live sessions.
create table sessions (
  token_hash text primary key,
  chat_id text not null references agents (chat_id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index sessions_chat_id_idx on sessions (chat_id);
create index sessions_expires_at_idx on sessions (expires_at);

-- Sign-in attempts between /auth/chat/login and /auth/chat/callback, single use.
create table oauth_states (
  state_hash text primary key,
  return_to text,
  popup boolean not null default false,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index oauth_states_expires_at_idx on oauth_states (expires_at);

create table admin_allowlist (
  chat_id text primary key references agents (chat_id) on delete cascade,
  active boolean not null default true,
  granted_by text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Admin audit rows (spec: Resources): who did what to which target, why, with before and after.
create table audit_log (
  id bigint generated always as identity primary key,
  actor_kind text not null check (actor_kind in ('agent', 'bot', 'system', 'operator')),
  actor_chat_id text,
  action text not null,
  target text,
  reason text,
  before jsonb,
  after jsonb,
  correlation_id text not null,
  created_at timestamptz not null default now()
);
create index audit_log_created_at_idx on audit_log (created_at desc, id desc);
create index audit_log_target_idx on audit_log (target, created_at desc);
create index audit_log_actor_idx on audit_log (actor_chat_id, created_at desc);
