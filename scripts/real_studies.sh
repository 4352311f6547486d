#!/usr/bin/env bash
# The real studies (data/studies/): each judge's verdict on real human labels, in one line,
# in seconds (no model is called). `make demo` runs this first. Exit 0 when every study ran
# (a REJECT is an outcome, not a failure); a missing shared data folder is said once and skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
accord=${ACCORD:-.venv/bin/accord}
status=0
# The small studies first, so a REJECT (MAD) and ACCEPTs (lesion, cebab_stars) show in the first seconds.
first="data/studies/mad/study.toml data/studies/alttest/lesion/study.toml data/studies/alttest/cebab_stars/study.toml data/studies/aggarwal/study.toml data/studies/asa/study.toml"
rest=$(ls data/studies/alttest/*/study.toml data/studies/mtbench-self-preference/study.toml | grep -v -e /lesion/ -e /cebab_stars/)
for study in $first $rest; do
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
