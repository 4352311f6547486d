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


def check_address(address: str) -> str:
    """``address`` if this machine can listen on it; else one InputError before anything starts (Streamlit
    would print its URL, then fail in its own traceback)."""
    import socket

    from samples.errors import InputError

    try:
        family, kind, _, _, where = socket.getaddrinfo(address, None, type=socket.SOCK_STREAM,
                                                       flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError, ValueError) as error:
        raise InputError(f"--address {address!r}: not a host name or IP address ({error})") from None
    with socket.socket(family, kind) as probe:
        try:
            probe.bind((where[0], 0))
        except OSError as error:
            raise InputError(f"--address {address!r}: cannot listen there ({error.strerror or error}); expected an "
                             "address of this machine, e.g. 127.0.0.1 or 0.0.0.0") from None
    return address
