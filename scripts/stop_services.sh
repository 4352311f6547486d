#!/usr/bin/env bash
# Ends every service this checkout started: each writes its pid to .run/*.pid.
# A stale pid file may name a pid that the system has since reused, so a process is
# only signalled when its command line points into this checkout or accord's cache
# (scripts/postgres.sh puts the checkout on the postmaster's command line).
set -u
cd "$(dirname "$0")/.."
repo=$(pwd)
cache="${ACCORD_CACHE:-$HOME/.cache/accord}"
ours() {
  local cmdline
  cmdline=$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ "$cmdline" == *"$repo"* || "$cmdline" == *"$cache"* || "$cmdline" == *" -m apps "* ]]
}
for f in .run/*.pid; do
  [ -e "$f" ] || continue
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && ours "$pid"; then
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]; then
      # A postmaster stops its own children, and only cleanly on its fast-shutdown signal.
      PG_PID_FILE=$f bash scripts/postgres.sh stop
    else
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$f"
done
exit 0
