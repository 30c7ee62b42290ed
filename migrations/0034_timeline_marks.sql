-- A replica is used only while it follows the primary's timeline (issue 40). Each instance with
-- read replicas marks the primary's timeline here when it first sees it (a promotion starts a new
-- one), and reads the highest mark on each replica: a replica that has not replayed the mark of
-- the primary's timeline is not following it (left on the old timeline by a failover, where it
-- may hold rows the new primary never received and positions that do not compare) or has not
-- caught up with the switch yet. A row written on a timeline reaches only the replicas that
-- follow it, so no privilege is needed to ask (pg_stat_wal_receiver's timeline needs
-- pg_read_all_stats, and pg_control_checkpoint() moves only at a restartpoint).
create table timeline_marks (
  timeline integer primary key,
  marked_at timestamptz not null default now()
);
