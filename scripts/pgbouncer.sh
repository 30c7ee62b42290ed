#!/usr/bin/env bash
# A PgBouncer in transaction mode in front of the machine's PostgreSQL (127.0.0.1:5432), for the
# suite "PostgreSQL through PgBouncer" (TEST_POOLER_URL) and the pooler-cost benchmark. Idempotent:
# a PgBouncer already answering on the port in transaction mode is kept, else one is configured and
# started. Run as root (it installs Debian's pgbouncer package when missing, and PgBouncer runs as
# the postgres user); .ci/run runs it before the suites, a developer runs it the same way:
#
#   scripts/pgbouncer.sh            # configure and start; prints the pooler's URL
#   scripts/pgbouncer.sh --stop     # stop it
#
# Its ini, user list, log and pid live in .ci/pgbouncer/ (ignored by git). Port: PGBOUNCER_PORT (6432).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PGBOUNCER_PORT:-6432}
DIR="$PWD/.ci/pgbouncer"
INI="$DIR/pgbouncer.ini"
# The admin console answers `show config` to the users named in admin_users.
admin() { psql -h 127.0.0.1 -p "$PORT" -U root -d pgbouncer -Atq -c "$1" 2>/dev/null; }
pool_mode() { admin 'show config' | awk -F'|' '$1 == "pool_mode" { print $2 }'; }

if [ "${1:-}" = "--stop" ]; then
  [ -f "$DIR/pgbouncer.pid" ] && kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true
  exit 0
fi

if [ "$(pool_mode || true)" = transaction ]; then
  echo "pooler: postgres://root@127.0.0.1:$PORT (PgBouncer, transaction mode, already running)"
  exit 0
fi

command -v pgbouncer >/dev/null || { apt-get install -y pgbouncer >/dev/null || { echo "pgbouncer is not installed and apt-get could not install it" >&2; exit 1; }; }
# Debian's package ships a service of its own on the same port: it is not the one configured here.
systemctl disable --now pgbouncer >/dev/null 2>&1 || true

mkdir -p "$DIR"
# Every connection is as the client's own user, to the server's trust auth on loopback; PgBouncer
# still wants each user in its auth_file (any password, unchecked under trust).
cat > "$DIR/userlist.txt" <<USERS
"root" ""
"postgres" ""
USERS
cat > "$INI" <<INI
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
admin_users = root, postgres
pool_mode = transaction
; The tests open hundreds of client connections (two apps per file, two files at a time) over
; short-lived databases: few server connections each, closed soon after their database is dropped.
max_client_conn = 2000
default_pool_size = 20
server_idle_timeout = 10
; The service sends no startup options through a pooler (src/platform/db/postgres.ts, JIT_OFF).
ignore_startup_parameters = extra_float_digits
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
chown -R postgres "$DIR"

[ -f "$DIR/pgbouncer.pid" ] && kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null && sleep 1 || true
runuser -u postgres -- pgbouncer -d "$INI"
for _ in $(seq 1 30); do [ "$(pool_mode || true)" = transaction ] && break; sleep 0.5; done
[ "$(pool_mode || true)" = transaction ] || { echo "PgBouncer did not come up on port $PORT (log: $DIR/pgbouncer.log)" >&2; exit 1; }
echo "pooler: postgres://root@127.0.0.1:$PORT (PgBouncer, transaction mode)"
