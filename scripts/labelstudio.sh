#!/usr/bin/env bash
# Label Studio 1.23.2 for accord, in its OWN virtual environment (it pins
# label-studio-sdk 2.1.2, whose opencv dependency caps numpy below 2.3, so it must
# never share accord's .venv).
#
#   scripts/labelstudio.sh install   idempotent: venv under $ACCORD_CACHE/labelstudio-1.23.2
#   scripts/labelstudio.sh start     start a server (env below), wait for /health, pid in .run/labelstudio.pid
#   scripts/labelstudio.sh stop      stop the server started by `start`
#   scripts/labelstudio.sh path      print the label-studio executable
#
# `start` reads: LS_PORT (default 8080), LS_DATA_DIR (default .run/labelstudio-data;
# the admin account and its token are only created on a FRESH data dir),
# LABEL_STUDIO_USERNAME (an email), LABEL_STUDIO_PASSWORD, LABEL_STUDIO_USER_TOKEN
# (6-40 characters), LS_START_TIMEOUT (seconds, default 240), LS_PID_FILE (default
# .run/labelstudio.pid; scripts/stop_services.sh stops every .run/*.pid), LS_HARDENED
# (default 1: scripts/labelstudio_hardening/ settings, where users cannot move
# themselves into another organisation; 0: Label Studio's stock settings), LS_DB
# (default sqlite, in the data dir; postgres: Label Studio's tables in the PostgreSQL
# database at LS_PG_URL, a libpq URL, by default database `labelstudio` of the cluster
# scripts/postgres.sh starts, created if missing; its first start runs every migration).
set -euo pipefail
VERSION=1.23.2
CACHE=${ACCORD_CACHE:-$HOME/.cache/accord}
PREFIX=$CACHE/labelstudio-$VERSION
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PIDFILE=${LS_PID_FILE:-$ROOT/.run/labelstudio.pid}

TEMPLATE=$PREFIX/migrated

install() {
  if [ -x "$PREFIX/bin/label-studio" ] && [ -e "$PREFIX/.installed" ] && [ -s "$TEMPLATE/label_studio.sqlite3" ]; then
    return 0
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.labelstudio-$VERSION.lock"
  flock 9
  if ! [ -x "$PREFIX/bin/label-studio" ] || ! [ -e "$PREFIX/.installed" ]; then
    install_venv
  fi
  [ -s "$TEMPLATE/label_studio.sqlite3" ] || build_template
}

install_venv() {
  rm -rf "$PREFIX"
  "${PYTHON:-python3}" -m venv "$PREFIX"
  "$PREFIX/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$PREFIX/bin/python" -m pip install -q --disable-pip-version-check "label-studio==$VERSION"
  # `label-studio --version` would migrate a database in ~/.local/share: check the import instead.
  "$PREFIX/bin/python" -c "import label_studio, label_studio_sdk"
  touch "$PREFIX/.installed"
  echo "label-studio $VERSION installed in $PREFIX"
}

# A migrated database without any user: `start` copies it into a fresh data dir, so a
# first start takes seconds instead of running every migration (about 45 s on an idle
# machine, minutes on a busy one). The admin account, its organisation and the preset
# token are still created at that first start, from the environment.
build_template() {
  local package
  package=$("$PREFIX/bin/python" -c "import label_studio, os; print(os.path.dirname(label_studio.__file__))")
  rm -rf "$TEMPLATE.tmp"
  mkdir -p "$TEMPLATE.tmp"
  (cd "$TEMPLATE.tmp" && env -u LABEL_STUDIO_USERNAME -u LABEL_STUDIO_PASSWORD -u LABEL_STUDIO_USER_TOKEN \
    LABEL_STUDIO_BASE_DATA_DIR="$TEMPLATE.tmp" LABEL_STUDIO_COLLECT_ANALYTICS=false SENTRY_DSN= \
    "$PREFIX/bin/python" "$package/manage.py" migrate --no-color --verbosity 0 >"$TEMPLATE.tmp/migrate.log" 2>&1)
  [ -s "$TEMPLATE.tmp/label_studio.sqlite3" ]
  rm -rf "$TEMPLATE"
  mv "$TEMPLATE.tmp" "$TEMPLATE"
}

healthy() {
  "$PREFIX/bin/python" - "$1" <<'PY' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
    sys.exit(0 if json.load(r).get("status") == "UP" else 1)
PY
}

# Label Studio's PostgreSQL settings (DJANGO_DB=default reads POSTGRE_*) from LS_PG_URL, parsed
# by libpq's rules (psycopg is in Label Studio's venv) and checked to answer before the start.
postgres_settings() {
  local url=${LS_PG_URL:-} fields
  if [ -z "$url" ]; then
    url=$(bash "$ROOT/scripts/postgres.sh" createdb labelstudio) || return 1
  fi
  fields=$(LS_PG_URL=$url "$PREFIX/bin/python" - <<'PY'
import os, sys
import psycopg
from psycopg.conninfo import conninfo_to_dict
try:
    params = conninfo_to_dict(os.environ["LS_PG_URL"])
except psycopg.Error as error:
    sys.exit(f"LS_PG_URL is not a PostgreSQL URL: {str(error).strip()}")
if not params.get("dbname"):
    sys.exit("LS_PG_URL names no database (postgresql://USER@HOST:PORT/DBNAME)")
try:
    psycopg.connect(os.environ["LS_PG_URL"], connect_timeout=10).close()
except psycopg.Error as error:
    where = f"database {params['dbname']} at {params.get('host', 'the default socket')}:{params.get('port', 5432)}"
    sys.exit(f"Label Studio's {where} does not answer: {str(error).strip().splitlines()[0]}")
for key, default in (("host", ""), ("port", "5432"), ("dbname", ""), ("user", ""), ("password", "")):
    print(params.get(key) or default)
PY
  ) || return 1
  local values
  mapfile -t values <<<"$fields"
  # $(...) dropped the trailing empty lines: an absent user or password is empty.
  export DJANGO_DB=default POSTGRE_HOST=${values[0]} POSTGRE_PORT=${values[1]} POSTGRE_NAME=${values[2]}
  export POSTGRE_USER=${values[3]:-} POSTGRE_PASSWORD=${values[4]:-}
}

start() {
  install
  local port=${LS_PORT:-8080}
  local data=${LS_DATA_DIR:-$ROOT/.run/labelstudio-data}
  local timeout=${LS_START_TIMEOUT:-240}
  mkdir -p "$ROOT/.run" "$data"
  if [ -e "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "label-studio already running (pid $(cat "$PIDFILE")); run '$0 stop' first" >&2
    return 1
  fi
  case "${LS_DB:-sqlite}" in
    sqlite)
      export DJANGO_DB=sqlite
      if ! [ -e "$data/label_studio.sqlite3" ]; then
        cp "$TEMPLATE/label_studio.sqlite3" "$data/label_studio.sqlite3"
      fi
      ;;
    postgres) postgres_settings || return 2 ;;
    *) echo "LS_DB '$LS_DB': use sqlite or postgres" >&2; return 2 ;;
  esac
  export LABEL_STUDIO_BASE_DATA_DIR=$data
  export LABEL_STUDIO_USERNAME=${LABEL_STUDIO_USERNAME:-admin@accord.local}
  export LABEL_STUDIO_PASSWORD=${LABEL_STUDIO_PASSWORD:-accord-admin-password}
  export LABEL_STUDIO_USER_TOKEN=${LABEL_STUDIO_USER_TOKEN:-accordadmintoken0123456789}
  export LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true
  export LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true
  export LABEL_STUDIO_COLLECT_ANALYTICS=false
  export SENTRY_DSN= FRONTEND_SENTRY_DSN=
  if [ "${LS_HARDENED:-1}" = 1 ]; then
    export PYTHONPATH=$ROOT/scripts/labelstudio_hardening DJANGO_SETTINGS_MODULE=accord_labelstudio_settings
  else
    unset PYTHONPATH DJANGO_SETTINGS_MODULE
  fi
  setsid "$PREFIX/bin/label-studio" start --no-browser --internal-host 127.0.0.1 --port "$port" \
    >"$data/server.log" 2>&1 < /dev/null &
  echo $! >"$PIDFILE"
  local deadline=$((SECONDS + timeout))
  until healthy "$port"; do
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "label-studio exited during start-up; log: $data/server.log" >&2
      tail -n 20 "$data/server.log" >&2 || true
      rm -f "$PIDFILE"
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "label-studio not healthy after ${timeout}s; log: $data/server.log" >&2
      stop
      return 1
    fi
    sleep 1
  done
  echo "label-studio up at http://127.0.0.1:$port (pid $(cat "$PIDFILE"), data $data)"
}

stop() {
  [ -e "$PIDFILE" ] || return 0
  local pid
  pid=$(cat "$PIDFILE")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  path) install >/dev/null; echo "$PREFIX/bin/label-studio" ;;
  *) echo "usage: $0 install|start|stop|path" >&2; exit 2 ;;
esac
