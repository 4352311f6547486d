#!/usr/bin/env bash
# Debian packages the tests need: chromium for the real-browser tests (Playwright
# drives Debian's binary; never `playwright install`); cmake, g++, make to build
# llama-server; flock (util-linux) for the build lock.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "accord: missing Debian packages: ${need[*]} (run: sudo apt-get install -y ${need[*]})" >&2
    exit 2
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
