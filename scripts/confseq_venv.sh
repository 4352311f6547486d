#!/usr/bin/env bash
# Isolated venv with confseq (Waudby-Smith & Ramdas' betting confidence sequences) for the
# side-by-side cross-check in tests/agreement/test_sequential.py. confseq builds a C++
# extension against Boost's headers (Debian's libboost-dev, scripts/install_system.sh) and
# pins nothing accord needs, so it lives apart, keyed by version under $ACCORD_CACHE. Idempotent.
set -euo pipefail
CACHE="${ACCORD_CACHE:-$HOME/.cache/accord}"
VENV="$CACHE/bench-venvs/confseq"
VERSION="0.0.11"
check="import importlib.metadata as m, sys, numpy as np, confseq.betting as b
sys.exit(m.version('confseq') != '$VERSION' or b.betting_cs(np.array([0.5, 1.0]))[0].size != 2)"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$check" 2>/dev/null; then
  exit 0
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
# confseq's own build requirements pin a pybind11 that predates Python 3.11's frame API; build it
# against a current pybind11 instead (the extension is its uniform boundaries; the betting CS is Python).
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "pybind11>=2.11" scikit-build setuptools wheel \
  "numpy<2" scipy matplotlib multiprocess pandas pytest
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation "confseq==$VERSION"
"$VENV/bin/python" -c "$check"
