# What the project's local PostgreSQL cluster scripts share (replica-clusters.sh, failover-clusters.sh):
# Debian's cluster tools on the newest installed version, and loopback-only trust. Sourced, not run.
VERSION=${PG_VERSION:-$(ls /etc/postgresql | sort -n | tail -n 1)}
ctl() { pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$@"; }
exists() { [ -d "/etc/postgresql/$VERSION/$1" ]; }
online() { pg_lsclusters -h | awk -v c="$1" '$2 == c && $4 ~ /^online/ { found = 1 } END { exit !found }'; }
psql_at() { local port=$1; shift; psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atq "$@"; }
wait_ready() { for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p "$1" && return 0; sleep 0.5; done; echo "PostgreSQL on port $1 did not come up" >&2; return 1; }

# Trust for loopback connections only, replication included; nothing listens beyond 127.0.0.1.
write_hba() {
  cat > "/etc/postgresql/$VERSION/$1/pg_hba.conf" <<HBA
local   all             all                                     trust
host    all             all             127.0.0.1/32            trust
local   replication     all                                     trust
host    replication     all             127.0.0.1/32            trust
HBA
}

# A standby's data taken afresh from the primary on port $3 into cluster $1 (created and configured
# by the caller) on port $2, then started. The copy carries the primary's ALTER SYSTEM settings:
# a standby keeps none of those the tests set (synchronous standbys, read-only).
take_standby() {
  local cluster=$1 port=$2 primary=$3
  local data="/var/lib/postgresql/$VERSION/$cluster"
  find "$data" -mindepth 1 -delete
  runuser -u postgres -- pg_basebackup -h 127.0.0.1 -p "$primary" -U postgres -D "$data" -R -X stream -c fast
  runuser -u postgres -- sed -i -e '/^synchronous_standby_names/d' -e '/^default_transaction_read_only/d' "$data/postgresql.auto.conf"
  ctl "$cluster" start
  wait_ready "$port"
}
