#!/usr/bin/env bash
# Isolated venv with ppi-python (PPI++ reference implementation) for the side-by-side
# cross-check in tests/agreement/test_correction.py. ppi-python needs numba and pins
# that do not fit accord's environment (shared NOTES.md), so it lives apart, keyed
# by version under $ACCORD_CACHE. Idempotent.
set -euo pipefail
CACHE="${ACCORD_CACHE:-$HOME/.cache/accord}"
VENV="$CACHE/bench-venvs/ppi"
VERSION="0.2.3"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('ppi-python') != '$VERSION')" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "ppi-python==$VERSION"
"$VENV/bin/python" -c "import ppi_py" 
