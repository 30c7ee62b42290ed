-- upgrade-safe unique-index: the release before seals form 1 only and (source, row_id) is already unique, so none of its rows can break (source, row_id, form)
-- upgrade-safe drop-constraint: the release before names no conflict target on audit_chain, and its sealer skips a row that has any seal
--
-- The audit chain's erasable form (issue 32, docs/decisions.md). A seal has a form: 1 is the row
-- hashed whole (issue 21), 2 hashes the row with each personal field replaced by a salted
-- commitment (src/platform/audit-chain/personal-fields.ts, form2.ts). The release before inserts
-- without a form: its seals are form 1, which verify-audit still accepts.
alter table audit_chain add column form smallint not null default 1 check (form in (1, 2));

-- A row sealed in form 1 is sealed again in form 2 before its first erasure: one seal per form.
create unique index audit_chain_row_form_key on audit_chain (source, row_id, form);
alter table audit_chain drop constraint audit_chain_source_row_id_key;

-- The sealer seals every form-1 row again in form 2, in the background after the upgrade (and
-- after the release before stops sealing): a checkpoint taken after that pins every row's form-2
-- seal. form1_position is how far it has gone; the partial index finds the form-1 seals after it.
alter table audit_chain_state add column form1_position bigint not null default 0;
create index audit_chain_form1_idx on audit_chain (position) where form = 1;

-- The salts of a form-2 seal's personal fields, by JSON pointer into the row as sealed (16 bytes,
-- hex), written in the seal's transaction; and the fields erased since, each with the commitment
-- its seal holds and the erasure that removed it. Nothing here is trusted by verify-audit: only
-- the commitments inside row_hash are. An erasure deletes the value's salt, so that the commitment
-- of a short value (a chat id, a name) cannot be searched for afterwards.
create table audit_seal_salts (
  source text not null check (source in ('audit_log', 'events')),
  row_id bigint not null,
  salts jsonb not null default '{}',
  erased jsonb not null default '{}',
  primary key (source, row_id)
);
