-- The training scenario catalog (issue 11; DESIGN.md "Training scenarios"): one row per scenario,
-- keyed by its slug, its definition (briefing, objectives, evidence) as validated JSON. Written by
-- `npm run cli -- import-scenarios` and the demo seed.
create table training_scenarios (
  id bigint generated always as identity primary key,
  slug text not null unique check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' and char_length(slug) <= 64),
  title text not null check (char_length(title) between 1 and 120),
  published boolean not null default false,
  definition jsonb not null check (jsonb_typeof(definition) = 'object'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index training_scenarios_title_idx on training_scenarios (title, id);
