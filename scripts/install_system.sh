#!/usr/bin/env bash
# Debian packages accord needs. `install_system.sh build` installs what building
# llama-server needs (cmake, g++, make; flock from util-linux for the build lock);
# with no argument it adds chromium for the real-browser tests (Playwright drives
# Debian's binary; never `playwright install`) and PostgreSQL, whose clusters the
# tests and benchmarks start themselves (scripts/postgres.sh), and Boost's headers, which the
# confseq cross-check venv compiles against (scripts/confseq_venv.sh).
set -euo pipefail
case "${1:-all}" in
  build) wanted=(cmake:cmake g++:g++ make:make flock:util-linux) ;;
  all) wanted=(cmake:cmake g++:g++ make:make flock:util-linux chromium:chromium
               '/usr/lib/postgresql/*/bin/initdb:postgresql' /usr/include/boost/version.hpp:libboost-dev) ;;
  *) echo "usage: install_system.sh [build|all]" >&2; exit 2 ;;
esac
need=()
for entry in "${wanted[@]}"; do
  check=${entry%%:*}
  # A path (a glob) for programs off PATH: Debian keeps the PostgreSQL server's in /usr/lib/postgresql/N/bin.
  case "$check" in
    /*) compgen -G "$check" >/dev/null ;;
    *) command -v "$check" >/dev/null 2>&1 ;;
  esac || need+=("${entry#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "accord: missing Debian packages: ${need[*]} (run: sudo apt-get install -y ${need[*]})" >&2
    exit 2
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
