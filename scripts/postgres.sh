#!/usr/bin/env bash
# A PostgreSQL cluster for accord's tests, benchmarks, Label Studio and users, from Debian's
# postgresql package (scripts/install_system.sh installs it). The only place that starts one.
#
#   scripts/postgres.sh start            initdb if the data dir is empty, start, wait until it accepts connections
#   scripts/postgres.sh stop             fast shutdown of the server started by `start`
#   scripts/postgres.sh url [DBNAME]     print its libpq URL (no password; default database: postgres)
#   scripts/postgres.sh createdb NAME    create database NAME unless it exists; print its URL
#
# Env: PG_PORT (default 54329; TCP on 127.0.0.1 only), PG_DATA_DIR, PG_SOCKET_DIR (defaults
# below), PG_START_TIMEOUT (seconds, default 60), PG_PID_FILE (default .run/postgres.pid;
# scripts/stop_services.sh stops every .run/*.pid), PG_BIN (the server's bin folder; default the
# newest /usr/lib/postgresql/*/bin).
#
# The cluster trusts every connection from this machine (its unix socket and 127.0.0.1) as the
# superuser `postgres`, with no password: a cluster for tests and development, not for a shared
# machine or real annotators' labels.
#
# initdb and postgres refuse to run as root, so as root they run as the `postgres` system user,
# which often cannot enter the checkout (/root is 0700, CI clones into a private folder): root's
# default data dir is under /tmp, in a folder named after this checkout. Sockets are always there
# (PG_DATA_DIR defaults to .run/postgres-data otherwise): a socket path must fit in 107 bytes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PIDFILE=${PG_PID_FILE:-$ROOT/.run/postgres.pid}
PORT=${PG_PORT:-54329}
BASE=/tmp/accord-postgres-$(id -u)-$(printf %s "$ROOT" | cksum | cut -d' ' -f1)
if [ "$(id -u)" = 0 ]; then
  DATA=${PG_DATA_DIR:-$BASE/data}
  as_server() { (cd / && runuser -u postgres -- "$@"); }
else
  DATA=${PG_DATA_DIR:-$ROOT/.run/postgres-data}
  as_server() { "$@"; }
fi
SOCKET=${PG_SOCKET_DIR:-$BASE/socket}

fail() {
  echo "postgres: $*" >&2
  exit 2
}

bindir() {
  local dir=${PG_BIN:-}
  if [ -z "$dir" ]; then
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  fi
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] ||
    fail "PostgreSQL is not installed (no initdb in ${dir:-/usr/lib/postgresql/*/bin}); run: bash scripts/install_system.sh (Debian's postgresql package)"
  echo "$dir"
}

# The postmaster this checkout started, by its pid file (not a process that reused its pid).
running() {
  [ -e "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && [ "$(cat "/proc/$(cat "$PIDFILE")/comm" 2>/dev/null)" = postgres ]
}

check_name() {
  [[ "$1" =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || fail "database name '$1': use up to 63 lower-case letters, digits and _"
}

# The socket dir goes into URLs and pg_ctl's option string unquoted.
check_socket_dir() {
  [[ "$SOCKET" =~ ^/[A-Za-z0-9._/-]+$ ]] || fail "PG_SOCKET_DIR '$SOCKET': use an absolute path of letters, digits and ._/-"
  [ ${#SOCKET} -le 90 ] || fail "PG_SOCKET_DIR '$SOCKET' is too long for a unix socket path (at most 90 characters)"
}

# A folder the server user owns and can reach; $BASE only if it is this user's own (it is in /tmp).
server_dir() {
  if [[ "$1" == "$BASE"/* ]]; then
    mkdir -p -m 0755 "$BASE"
    [ -O "$BASE" ] && ! [ -L "$BASE" ] || fail "$BASE is not a folder of $(id -un); remove it or set PG_DATA_DIR and PG_SOCKET_DIR"
  fi
  mkdir -p "$1"
  [ "$(id -u)" != 0 ] || chown postgres:postgres "$1"
  chmod "$2" "$1"
  as_server test -w "$1" -a -x "$1" ||
    fail "the postgres user cannot reach $1 (a parent folder is private); put PG_DATA_DIR and PG_SOCKET_DIR under /tmp"
}

start() {
  local bin log lines opts
  bin=$(bindir)
  check_socket_dir
  if running; then
    fail "already running (pid $(cat "$PIDFILE")); run '$0 stop' first"
  fi
  if [ -n "$(ls -A "$DATA" 2>/dev/null)" ] && ! [ -e "$DATA/PG_VERSION" ]; then
    fail "$DATA is not empty and holds no PostgreSQL cluster; set PG_DATA_DIR to an empty or new folder"
  fi
  mkdir -p "$(dirname "$PIDFILE")"
  server_dir "$DATA" 0700
  server_dir "$SOCKET" 0755
  if ! [ -e "$DATA/PG_VERSION" ]; then
    local out
    # C collation with UTF-8: the same sort order whatever the machine's locale.
    out=$(as_server "$bin/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C --no-instructions 2>&1) ||
      fail "initdb $DATA failed: $(tail -n 1 <<<"$out")"
  fi
  log=$DATA/server.log
  lines=0
  [ ! -e "$log" ] || lines=$(wc -l <"$log")
  # accord.checkout (a custom setting) puts this checkout on the postmaster's command line, which
  # is how scripts/stop_services.sh tells a server of ours from a process that reused its pid.
  opts="-p $PORT -h 127.0.0.1 -k $SOCKET -c accord.checkout=$(printf %q "$ROOT")"
  if ! as_server "$bin/pg_ctl" start -D "$DATA" -l "$log" -w -t "${PG_START_TIMEOUT:-60}" -o "$opts" >/dev/null 2>&1 ||
    ! "$bin/pg_isready" -q -h "$SOCKET" -p "$PORT"; then
    local reason
    # This start's last complaints, without their timestamps, on one line.
    reason=$(tail -n +"$((lines + 1))" "$log" 2>/dev/null | grep -E '(FATAL|PANIC): |LOG: +could not' | tail -n 2 |
      sed -E 's/^[^]]*\] [A-Z]+: +//' | awk 'NR > 1 { printf "; " } { printf "%s", $0 }' || true)
    as_server "$bin/pg_ctl" stop -D "$DATA" -m immediate >/dev/null 2>&1 || true
    fail "could not start on port $PORT: ${reason:-not accepting connections after ${PG_START_TIMEOUT:-60}s} (log: $log)"
  fi
  head -n 1 "$DATA/postmaster.pid" >"$PIDFILE"
  echo "postgres up at $(url postgres) (pid $(cat "$PIDFILE"), data $DATA)"
}

# SIGINT is PostgreSQL's fast shutdown: the postmaster ends the sessions, writes a checkpoint and
# stops its children itself. SIGTERM (smart shutdown) waits until every client has disconnected,
# and killing the children leaves the cluster to recover from a crash at its next start.
stop() {
  [ -e "$PIDFILE" ] || return 0
  local pid
  pid=$(cat "$PIDFILE")
  if running; then
    kill -INT "$pid"
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    # Still up after 60 s: immediate shutdown (crash recovery at the next start).
    kill -QUIT "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PIDFILE"
}

url() {
  check_name "${1:-postgres}"
  check_socket_dir
  echo "postgresql://postgres@/${1:-postgres}?host=$SOCKET&port=$PORT"
}

createdb() {
  local name=${1:-} bin psql
  check_name "$name"
  check_socket_dir
  bin=$(bindir)
  "$bin/pg_isready" -q -h "$SOCKET" -p "$PORT" || fail "no server on port $PORT (socket $SOCKET); run: $0 start"
  psql=("$bin/psql" -X -q -tA -v ON_ERROR_STOP=1 -h "$SOCKET" -p "$PORT" -U postgres -d postgres)
  exists() { [ "$("${psql[@]}" -c "select 1 from pg_database where datname = '$name'")" = 1 ]; }
  # A concurrent createdb of the same name may win between the check and the create: check again.
  exists || "${psql[@]}" -c "create database $name" >/dev/null 2>&1 || exists || fail "could not create database $name"
  url "$name"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) url "${2:-}" ;;
  createdb) createdb "${2:-}" ;;
  *) echo "usage: $0 start|stop|url [DBNAME]|createdb NAME" >&2; exit 2 ;;
esac
