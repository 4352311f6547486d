#!/usr/bin/env bash
# The real studies (data/studies/): each judge's verdict on real human labels, in one line,
# in seconds (no model is called). `make demo` runs this first. Exit 0 when every study ran
# (a REJECT is an outcome, not a failure); a missing shared data folder is said once and skipped.
# One `accord run` runs them all: the libraries load once per worker, ACCORD_JOBS studies side by
# side (default: one per core), each study's lines printed in this order as soon as they are ready.
set -uo pipefail
cd "$(dirname "$0")/.."
accord=${ACCORD:-.venv/bin/accord}
jobs=${ACCORD_JOBS:-$(nproc 2>/dev/null || echo 2)}
# The small studies first, so a REJECT (MAD) and ACCEPTs (lesion, cebab_stars) show in the first seconds.
first="data/studies/mad/study.toml data/studies/alttest/lesion/study.toml data/studies/alttest/cebab_stars/study.toml data/studies/aggarwal/study.toml data/studies/asa/study.toml"
rest=$(ls data/studies/alttest/*/study.toml data/studies/mtbench-self-preference/study.toml | grep -v -e /lesion/ -e /cebab_stars/)
# shellcheck disable=SC2086  # one word per study file
"$accord" run $first $rest --quiet --jobs "$jobs"
rc=$?
if [ "$rc" -eq 2 ] && ! "$accord" status data/studies/mad/study.toml >/dev/null 2>&1; then
  echo "real studies: skipped (see the line above; set ACCORD_SHARED to the folder holding data/)" >&2
  exit 0
fi
[ "$rc" -eq 2 ] && exit 2
exit 0
