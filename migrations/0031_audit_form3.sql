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
-- row the sealer then seals, [erasure id, reference, table, row id, pointer, value] each. (A field
-- edited by SQL before this upgrade is attested with them; a checkpoint taken before the upgrade,
-- passed to verify-audit --against, still shows the edit's seal at its place.)
insert into audit_log (actor_kind, action, reason, after, correlation_id)
select 'system', 'admin.erasures_attested',
       'Fields erased before erasure records named them (migration 0031, issue 39)',
       jsonb_build_object('fields', jsonb_agg(jsonb_build_array(e.value ->> 'erasure', e.value ->> 'reference', s.source, s.row_id, e.key, e.value ->> 'value')
                                              order by s.source, s.row_id, e.key)),
       'migration-0031'
  from audit_seal_salts s cross join lateral jsonb_each(s.erased) e
having count(*) > 0;

-- The release before keeps serving during the upgrade, and its erasures write records without the
-- list: the list is filled in from the erased entries its erasure just wrote, in its transaction.
-- This release writes the list itself (an empty one too), which the trigger leaves alone.
create function audit_erasure_record_fields() returns trigger language plpgsql as $$
begin
  if new.action in ('admin.subject_erased', 'admin.case_erased') and jsonb_typeof(new.after) = 'object'
     and new.after ? 'erasure_id' and not new.after ? 'fields' then
    new.after := new.after || jsonb_build_object('fields', coalesce((
      select jsonb_agg(jsonb_build_array(s.source, s.row_id, e.key, e.value ->> 'value') order by s.source, s.row_id, e.key)
        from audit_seal_salts s cross join lateral jsonb_each(s.erased) e
       where s.erased <> '{}'::jsonb and e.value ->> 'erasure' = new.after ->> 'erasure_id'), '[]'::jsonb));
  end if;
  return new;
end $$;
create trigger audit_log_erasure_record_fields before insert on audit_log
  for each row execute function audit_erasure_record_fields();
