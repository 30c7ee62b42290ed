-- The audit chain's form 3 (issue 39, findings 4 and 5; src/platform/audit-chain/forms.ts): a row
-- hash that binds which leaves were personal strings, staff's leaves hashed as they are. The
-- sealer writes it from this release on; form-1 and form-2 seals stay and still verify.
-- upgrade-safe drop-constraint: a check constraint, which no `on conflict` names; the release before writes forms 1 and 2, which the check added next allows
alter table audit_chain drop constraint audit_chain_form_check;
-- upgrade-safe add-constraint: the same check widened to form 3; every row the release before writes passes it, and the existing ones are checked without blocking writes
alter table audit_chain add constraint audit_chain_form_check check (form in (1, 2, 3)) not valid;
alter table audit_chain validate constraint audit_chain_form_check;

-- An erased field verifies only against a record naming it (erasure-records.ts). Erasures made
-- before this release wrote no such list: their fields are attested once here, in one admin audit
-- row the sealer then seals. (A field edited by SQL before this upgrade is attested with them; a
-- checkpoint taken before the upgrade, passed to verify-audit --against, still shows the edit's
-- seal at its place.)
insert into audit_log (actor_kind, action, reason, after, correlation_id)
select 'system', 'admin.erasures_attested',
       'Fields erased before erasure records named them (migration 0031, issue 39)',
       jsonb_build_object('fields', jsonb_agg(jsonb_build_array(e.value ->> 'erasure', s.source, s.row_id, e.key, e.value ->> 'value') order by s.source, s.row_id, e.key)),
       'migration-0031'
  from audit_seal_salts s cross join lateral jsonb_each(s.erased) e
having count(*) > 0;
