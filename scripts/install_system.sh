#!/usr/bin/env bash
# Debian packages the tests need: chromium for the real-browser tests (Playwright
# drives Debian's binary; never `playwright install`).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "accord: missing Debian packages: ${need[*]} (run: sudo apt-get install -y ${need[*]})" >&2
    exit 2
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
