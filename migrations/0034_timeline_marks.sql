-- A replica is used only while it follows the primary's timeline (issue 40). Each instance with
-- read replicas writes a mark here, a random token, on the primary's timeline when it first sees
-- it (a promotion starts a new one, and the marks written before it are on both timelines), and
-- asks each replica whether it has replayed that token: a replica that has not is not following
-- the primary (left on the old timeline by a failover, where it may hold rows the new primary
-- never received and positions that do not compare) or has not caught up with the mark yet. A row
-- written on a timeline reaches only the servers that follow it, so no privilege is needed to ask
-- (pg_stat_wal_receiver's timeline needs pg_read_all_stats, and pg_control_checkpoint() moves only
-- at a restartpoint); a token rather than the timeline's number, since pg_upgrade and a restore
-- into a new cluster start again at timeline 1 with the marks of the old one.
create table timeline_marks (
  token uuid primary key,
  timeline integer not null,
  marked_at timestamptz not null default now()
);
