#!/usr/bin/env bash
# One more PostgreSQL cluster, an asynchronous standby of a running primary, taken afresh from a
# base backup: test/slow/replica-timeline.test.ts makes it a read replica of the failover pair's
# primary (scripts/failover-clusters.sh), then promotes the pair's standby, so that this one is left
# on the old timeline. Run as root; loopback only, trust authentication.
#
#   scripts/standby-cluster.sh NAME PORT PRIMARY_PORT   # (re)created, started, streaming
#   scripts/standby-cluster.sh --drop NAME
set -euo pipefail

# shellcheck source=lib/pg-clusters.sh
. "$(dirname "$0")/lib/pg-clusters.sh"

if [ "${1:-}" = "--drop" ]; then
  if exists "$2"; then pg_dropcluster --stop "$VERSION" "$2"; fi
  exit 0
fi
name=$1 port=$2 primary=$3

if exists "$name"; then pg_dropcluster --stop "$VERSION" "$name"; fi
pg_createcluster "$VERSION" "$name" -p "$port" >/dev/null
write_hba "$name"
# A hot standby needs max_connections at least the primary's (200 on the failover pair).
cat > "/etc/postgresql/$VERSION/$name/conf.d/cms-standby.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
hot_standby = on
max_connections = 200
CONF
take_standby "$name" "$port" "$primary"
for _ in $(seq 1 60); do
  [ "$(psql_at "$primary" -c "select count(*) from pg_stat_replication where application_name like '%$name' and state = 'streaming'")" -ge 1 ] && exit 0
  sleep 0.5
done
echo "the standby $name on port $port is not streaming from port $primary" >&2
exit 1
