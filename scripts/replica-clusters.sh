#!/usr/bin/env bash
# A PostgreSQL primary and a streaming replica of the project's own, on local ports, for the
# replica tests (test/replicas.test.ts) and benchmarks; then the failover test's own pair
# (scripts/failover-clusters.sh, ports 5451 and 5452, roles that swap). Idempotent: what exists is started and
# checked, what is missing is created. Run as root (pg_createcluster, and the clusters run as the
# postgres user as Debian's own do). .ci/run runs it before the suites; a developer runs it the same way:
#
#   scripts/replica-clusters.sh            # create or start; prints the two URLs
#   scripts/replica-clusters.sh --drop     # remove both clusters
#
# The machine's own cluster (5432) is left alone: its pg_hba.conf has no replication entry.
# Ports: REPLICA_PRIMARY_PORT (5441) and REPLICA_PORT (5442); both trust local connections only.
set -euo pipefail

# shellcheck source=lib/pg-clusters.sh
. "$(dirname "$0")/lib/pg-clusters.sh"
PRIMARY=cms_primary
REPLICA=cms_replica
PRIMARY_PORT=${REPLICA_PRIMARY_PORT:-5441}
REPLICA_PORT=${REPLICA_PORT:-5442}

configure() {
  local cluster=$1 port=$2
  local dir="/etc/postgresql/$VERSION/$cluster"
  write_hba "$cluster"
  cat > "$dir/conf.d/cms-replication.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
hot_standby = on
hot_standby_feedback = on
max_connections = 200
CONF
}

if [ "${1:-}" = "--drop" ]; then
  for cluster in "$REPLICA" "$PRIMARY"; do
    if exists "$cluster"; then pg_dropcluster --stop "$VERSION" "$cluster"; fi
  done
  "$(dirname "$0")/failover-clusters.sh" --drop
  exit 0
fi

if ! exists "$PRIMARY"; then
  pg_createcluster "$VERSION" "$PRIMARY" -p "$PRIMARY_PORT" >/dev/null
  configure "$PRIMARY" "$PRIMARY_PORT"
fi
online "$PRIMARY" || ctl "$PRIMARY" start
wait_ready "$PRIMARY_PORT"
psql_at "$PRIMARY_PORT" -c "select 1 from pg_roles where rolname = 'root'" | grep -q 1 \
  || psql_at "$PRIMARY_PORT" -c 'create role root superuser login'
psql_at "$PRIMARY_PORT" -c "select 1 from pg_replication_slots where slot_name = 'cms_replica'" | grep -q 1 \
  || psql_at "$PRIMARY_PORT" -c "select pg_create_physical_replication_slot('cms_replica')" >/dev/null

# A replica that is missing, or no longer one (promoted, or its copy broken), is taken afresh.
rebuild=0
exists "$REPLICA" || rebuild=1
if [ "$rebuild" = 0 ]; then
  online "$REPLICA" || ctl "$REPLICA" start || rebuild=1
fi
if [ "$rebuild" = 0 ]; then
  wait_ready "$REPLICA_PORT" || rebuild=1
fi
if [ "$rebuild" = 0 ] && [ "$(psql_at "$REPLICA_PORT" -c 'select pg_is_in_recovery()')" != t ]; then rebuild=1; fi
if [ "$rebuild" = 1 ]; then
  if exists "$REPLICA"; then pg_dropcluster --stop "$VERSION" "$REPLICA"; fi
  pg_createcluster "$VERSION" "$REPLICA" -p "$REPLICA_PORT" >/dev/null
  configure "$REPLICA" "$REPLICA_PORT"
  data="/var/lib/postgresql/$VERSION/$REPLICA"
  find "$data" -mindepth 1 -delete
  # -R writes primary_conninfo and standby.signal; the slot keeps the WAL the replica still needs.
  runuser -u postgres -- pg_basebackup -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$data" -R -X stream -S cms_replica -c fast
  ctl "$REPLICA" start
  wait_ready "$REPLICA_PORT"
fi
# A test stopped while it held replay paused must not leave the replica behind for the next run.
psql_at "$REPLICA_PORT" -c 'select pg_wal_replay_resume()' >/dev/null

for _ in $(seq 1 60); do
  [ "$(psql_at "$PRIMARY_PORT" -c "select count(*) from pg_stat_replication where state = 'streaming'")" -ge 1 ] && break
  sleep 0.5
done
[ "$(psql_at "$PRIMARY_PORT" -c "select count(*) from pg_stat_replication where state = 'streaming'")" -ge 1 ] \
  || { echo "the replica on port $REPLICA_PORT is not streaming from port $PRIMARY_PORT" >&2; exit 1; }
echo "primary: postgres://root@127.0.0.1:$PRIMARY_PORT/postgres"
echo "replica: postgres://root@127.0.0.1:$REPLICA_PORT/postgres"
"$(dirname "$0")/failover-clusters.sh"
