-- Read positions survive a failover (issue 40): the table is logged now, so a synchronous standby
-- has every caller's position when it is promoted (unlogged, it started empty there, and a
-- caller's next read could go to a replica that had not replayed their write). Each position
-- records the timeline it was taken on: after a promotion the new primary is on a new timeline,
-- and a position of the old one does not compare with it (read-positions.ts reads it on the
-- primary only while the timelines agree; otherwise the read goes to the primary). Nullable: the
-- release before writes none, and its positions compare as they always did.
alter table read_positions set logged;
alter table read_positions add column timeline integer;
