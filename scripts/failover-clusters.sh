#!/usr/bin/env bash
# Two PostgreSQL clusters of the project's own for the failover test (test/slow/failover.test.ts, issue
# 30): a primary and a synchronous standby (synchronous_standby_names = '*', synchronous_commit =
# on), on ports 5451 and 5452. Roles swap when the test fails over, so neither port is "the
# primary": this script finds the primary (the cluster online and not in recovery; of two, the one
# on the later timeline) and makes the other its standby again, with a new base backup when it is
# missing, stopped, diverged or not streaming. Idempotent; run as root. scripts/replica-clusters.sh
# runs it, so .ci/run brings both pairs up; a developer runs it the same way:
#
#   scripts/failover-clusters.sh           # create, start or repair; prints the multi-host URL
#   scripts/failover-clusters.sh --drop    # remove both clusters
#
# Loopback only, trust authentication; the machine's own cluster (5432) is left alone.
set -euo pipefail

# shellcheck source=lib/pg-clusters.sh
. "$(dirname "$0")/lib/pg-clusters.sh"
CLUSTERS=(cms_failover_a cms_failover_b)
PORTS=("${FAILOVER_A_PORT:-5451}" "${FAILOVER_B_PORT:-5452}")

configure() {
  local cluster=$1 port=$2
  local dir="/etc/postgresql/$VERSION/$cluster"
  write_hba "$cluster"
  # The same settings on both: either may be the primary. A commit returns once the standby has
  # flushed it (RPO 0); the test switches synchronous_standby_names off on a promoted standby
  # that has no standby of its own yet (ALTER SYSTEM), and this script resets it once it has.
  cat > "$dir/conf.d/cms-failover.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
hot_standby = on
synchronous_commit = on
synchronous_standby_names = '*'
max_connections = 200
CONF
}

if [ "${1:-}" = "--drop" ]; then
  for cluster in "${CLUSTERS[@]}"; do
    if exists "$cluster"; then pg_dropcluster --stop "$VERSION" "$cluster"; fi
  done
  exit 0
fi

# "t" in recovery, "f" a primary, "" not answering.
recovery() { psql_at "$1" -c 'select pg_is_in_recovery()' 2>/dev/null || true; }
timeline() { psql_at "$1" -c 'select timeline_id from pg_control_checkpoint()' 2>/dev/null || echo 0; }

# The primary: an online cluster not in recovery (the later timeline of two). None online: start
# what exists and ask again. Nothing exists: the first is created as the primary.
find_primary() {
  local best="" best_tl=-1 i
  for i in 0 1; do
    if exists "${CLUSTERS[$i]}" && online "${CLUSTERS[$i]}" && [ "$(recovery "${PORTS[$i]}")" = f ]; then
      local tl; tl=$(timeline "${PORTS[$i]}")
      if [ "$tl" -gt "$best_tl" ]; then best=$i; best_tl=$tl; fi
    fi
  done
  echo "$best"
}

primary=$(find_primary)
if [ -z "$primary" ]; then
  for i in 0 1; do
    if exists "${CLUSTERS[$i]}" && ! online "${CLUSTERS[$i]}"; then ctl "${CLUSTERS[$i]}" start || true; wait_ready "${PORTS[$i]}" || true; fi
  done
  primary=$(find_primary)
fi
if [ -z "$primary" ]; then
  primary=0
  if exists "${CLUSTERS[0]}"; then pg_dropcluster --stop "$VERSION" "${CLUSTERS[0]}"; fi
  pg_createcluster "$VERSION" "${CLUSTERS[0]}" -p "${PORTS[0]}" >/dev/null
  configure "${CLUSTERS[0]}" "${PORTS[0]}"
  # No standby yet: commits must not wait for one while the first base backup is taken.
  echo "synchronous_standby_names = ''" >> "/var/lib/postgresql/$VERSION/${CLUSTERS[0]}/postgresql.auto.conf"
  ctl "${CLUSTERS[0]}" start
  wait_ready "${PORTS[0]}"
fi
standby=$((1 - primary))
P=${CLUSTERS[$primary]} PP=${PORTS[$primary]} S=${CLUSTERS[$standby]} SP=${PORTS[$standby]}
psql_at "$PP" -c "select 1 from pg_roles where rolname = 'root'" | grep -q 1 || psql_at "$PP" -c 'create role root superuser login'

streaming() { [ "$(psql_at "$PP" -c "select count(*) from pg_stat_replication where state = 'streaming'")" -ge 1 ]; }

# The standby is taken afresh unless it is online, in recovery and streaming from the primary (an
# old primary stopped by a failover has diverged: a new base backup puts it on the new timeline).
rebuild=1
if exists "$S" && online "$S" && [ "$(recovery "$SP")" = t ]; then
  for _ in $(seq 1 20); do streaming && { rebuild=0; break; }; sleep 0.25; done
fi
if [ "$rebuild" = 1 ]; then
  # Commits on the primary must not wait for the standby being rebuilt.
  psql_at "$PP" -c "alter system set synchronous_standby_names = ''" -c 'select pg_reload_conf()' >/dev/null
  if exists "$S"; then pg_dropcluster --stop "$VERSION" "$S"; fi
  pg_createcluster "$VERSION" "$S" -p "$SP" >/dev/null
  configure "$S" "$SP"
  take_standby "$S" "$SP" "$PP"
fi
for _ in $(seq 1 60); do streaming && break; sleep 0.5; done
streaming || { echo "the standby on port $SP is not streaming from port $PP" >&2; exit 1; }

# Synchronous again: the file's '*' rather than the override a failover or a rebuild left.
psql_at "$PP" -c 'alter system reset synchronous_standby_names' -c 'select pg_reload_conf()' >/dev/null
for _ in $(seq 1 40); do
  [ "$(psql_at "$PP" -c "select count(*) from pg_stat_replication where sync_state = 'sync'")" -ge 1 ] && break
  sleep 0.25
done
[ "$(psql_at "$PP" -c "select count(*) from pg_stat_replication where sync_state = 'sync'")" -ge 1 ] \
  || { echo "the standby on port $SP is not synchronous" >&2; exit 1; }
# Whatever a test left behind (a read-only primary) does not outlive it.
psql_at "$PP" -c 'alter system reset default_transaction_read_only' -c 'select pg_reload_conf()' >/dev/null
echo "primary: $P (port $PP), synchronous standby: $S (port $SP)"
echo "url: postgres://root@127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]}/postgres?target_session_attrs=read-write"
