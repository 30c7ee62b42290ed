-- Training sessions (issue 11; spec: Resources "Training session", States "Training session"): the
-- parent session with its run clock and evaluation, its two membership rows, its scenario instances
-- (children, each with a snapshot of the scenario's definition and the state of its run), the
-- trainer's injections and both sides' notes. Its events are canonical events carrying the session id.
create table training_sessions (
  id bigint generated always as identity primary key,
  status text not null default 'pending' check (status in ('pending', 'active', 'paused', 'completed', 'aborted')),
  -- A restart begins run n+1; every event of the session says which run it belongs to.
  run integer not null default 1 check (run >= 1),
  -- Time spent active in this run before running_since; running_since is set exactly while active.
  elapsed_ms bigint not null default 0 check (elapsed_ms >= 0),
  running_since timestamptz,
  started_at timestamptz,
  ended_at timestamptz,
  score smallint check (score between 0 and 100),
  result text check (result in ('pass', 'fail')),
  comments text check (char_length(comments) <= 2000),
  released_feedback text check (char_length(released_feedback) <= 2000),
  evaluated_at timestamptz,
  evaluated_by text references agents (chat_id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint training_sessions_clock check ((status = 'active') = (running_since is not null)),
  constraint training_sessions_evaluation check ((evaluated_at is null) = (score is null) and (score is null) = (result is null))
);

-- Who takes part, and as what. The list of an agent's sessions starts here.
create table training_session_members (
  session_id bigint not null references training_sessions (id),
  chat_id text not null references agents (chat_id),
  role text not null check (role in ('trainer', 'trainee')),
  created_at timestamptz not null default now(),
  primary key (session_id, role),
  unique (session_id, chat_id)
);
create index training_session_members_chat_id_idx on training_session_members (chat_id, session_id desc);

-- Scenario instances: waiting, then active, completed when another scenario is activated. The
-- definition is the catalog's at the moment the scenario joined the session, so a re-import never
-- changes a run under way (its objective ids and evidence keys are what the state refers to).
create table training_session_scenarios (
  id bigint generated always as identity primary key,
  session_id bigint not null references training_sessions (id),
  scenario_id bigint not null references training_scenarios (id),
  position integer not null check (position >= 1),
  status text not null default 'waiting' check (status in ('waiting', 'active', 'completed')),
  definition jsonb not null check (jsonb_typeof(definition) = 'object'),
  state jsonb not null check (jsonb_typeof(state) = 'object'),
  activated_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (session_id, scenario_id),
  unique (session_id, position)
);
create unique index training_session_scenarios_one_active_idx on training_session_scenarios (session_id) where status = 'active';

create table training_injections (
  id bigint generated always as identity primary key,
  session_id bigint not null references training_sessions (id),
  type text not null check (type in ('supplemental_report', 'witness_statement', 'admin_information', 'custom_message', 'simulated_evidence')),
  title text check (char_length(title) <= 120),
  content text not null check (char_length(content) between 1 and 2000),
  created_by text not null references agents (chat_id),
  created_at timestamptz not null default now()
);
create index training_injections_session_id_idx on training_injections (session_id, id);

create table training_notes (
  id bigint generated always as identity primary key,
  session_id bigint not null references training_sessions (id),
  author_chat_id text not null references agents (chat_id),
  author_role text not null check (author_role in ('trainer', 'trainee')),
  body text not null check (char_length(body) between 1 and 1000),
  released boolean not null,
  released_at timestamptz,
  created_at timestamptz not null default now(),
  constraint training_notes_released_at check (released = (released_at is not null))
);
create index training_notes_session_id_idx on training_notes (session_id, id);

-- A session's events are canonical events (spec: Events) tagged with the session; a trainee action
-- may carry the client's id, unique within the session, so a retried post is recorded once.
alter table events add column training_session_id bigint;
alter table events add column client_id text;
create index events_training_session_idx on events (training_session_id, id desc) where training_session_id is not null;
create unique index events_training_client_id_key on events (training_session_id, client_id) where client_id is not null;
