"""The one way accord starts a Streamlit app (the coding app, the dashboard)."""

from __future__ import annotations

import sys
from pathlib import Path


def streamlit_command(script: Path, *, address: str, port: int) -> list[str]:
    """``streamlit run SCRIPT`` headless on ADDRESS:PORT, tuned for serving annotators.

    ``runner.postScriptGC false``: Streamlit otherwise runs a full garbage collection
    after every rerun while holding the GIL, about 30 ms of server CPU per submit on
    2 cores; with it off the 5-session submit p95 fell from 844 to 401 ms
    (benchmarks/bench_annotate.py); Python's automatic collection still runs. A served
    app never reloads on edits, so no file watcher either.
    """
    return [
        sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
        "--server.address", address, "--server.port", str(port), "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "viewer", "--runner.postScriptGC", "false", "--server.fileWatcherType", "none",
    ]
