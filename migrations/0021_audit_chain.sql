-- The tamper-evident audit trail (issue 21): every row of events and audit_log is sealed, in one
-- order, into a SHA-256 hash chain per environment (src/audit/chain/). The sealer runs after the
-- commit, one at a time across instances (an advisory lock), so the write path only adds a column.
--
-- sealing_tx is the inserting transaction's id (64 bits: it never wraps). Ids from a sequence
-- commit out of order; transaction ids below pg_snapshot_xmin(pg_current_snapshot()) belong to
-- transactions that have all ended. The sealer takes only rows below that mark, in the order
-- (sealing_tx, table, id), so every sealer on every instance agrees on the order of the chain.
-- Rows written before this migration read the constant 0 (a fast default: no table rewrite);
-- new rows get their own transaction's id.
alter table events add column sealing_tx xid8 not null default '0';
alter table events alter column sealing_tx set default pg_current_xact_id();
alter table audit_log add column sealing_tx xid8 not null default '0';
alter table audit_log alter column sealing_tx set default pg_current_xact_id();
create index events_sealing_idx on events (sealing_tx, id);
create index audit_log_sealing_idx on audit_log (sealing_tx, id);

-- One seal per row, position 1, 2, 3, ... without gaps. row_hash covers the row's whole content;
-- chain_hash covers the previous seal's chain_hash, the position and row_hash.
create table audit_chain (
  position bigint primary key,
  source text not null check (source in ('audit_log', 'events')),
  row_id bigint not null,
  row_hash bytea not null check (length(row_hash) = 32),
  chain_hash bytea not null check (length(chain_hash) = 32),
  sealed_at timestamptz not null default clock_timestamp(),
  unique (source, row_id)
);

-- The sealer's progress, per table: every row up to (tx, id) in the order (sealing_tx, id) is
-- sealed, and the next batch starts right after it (an index range scan, however large the
-- transaction the rows came from).
create table audit_chain_state (
  singleton boolean primary key default true check (singleton),
  audit_log_tx xid8 not null default '0',
  audit_log_id bigint not null default 0,
  events_tx xid8 not null default '0',
  events_id bigint not null default 0
);
insert into audit_chain_state default values;

-- Each verify-audit run (GET /admin/health shows the latest).
create table audit_verifications (
  id bigint generated always as identity primary key,
  verified_at timestamptz not null default now(),
  ok boolean not null,
  rows_verified bigint not null,
  head_hash text,
  against text,
  problem text,
  seconds double precision not null
);
