-- A person erased once may appear again (a new report names them) and be erased again (issue 39,
-- finding 2): each erasure is a record of its own, all under the person's one pseudonym.
-- upgrade-safe drop-constraint: no release names a conflict target on subject_erasures; 0.3.0 inserts one row per erasure and reads none back by pseudonym
alter table subject_erasures drop constraint subject_erasures_pseudonym_key;
create index subject_erasures_pseudonym_idx on subject_erasures (pseudonym, id);
