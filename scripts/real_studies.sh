#!/usr/bin/env bash
# The real studies (data/studies/): each judge's verdict on real human labels, in one line,
# in seconds (no model is called). `make demo` runs this first. Exit 0 when every study ran
# (a REJECT is an outcome, not a failure); a missing shared data folder is said once and skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
accord=${ACCORD:-.venv/bin/accord}
status=0
for study in data/studies/mad/study.toml data/studies/alttest/*/study.toml data/studies/mtbench-self-preference/study.toml; do
  "$accord" run "$study" --quiet
  rc=$?
  if [ "$rc" -eq 2 ]; then
    if ! "$accord" status "$study" >/dev/null 2>&1; then
      echo "real studies: skipped (see the line above; set ACCORD_SHARED to the folder holding data/)" >&2
      exit 0
    fi
    status=2
  fi
done
exit "$status"
