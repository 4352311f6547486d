"""The one way accord starts a Streamlit app (the coding app, the dashboard), and ends it with the CLI."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from samples import InputError


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

    from samples import InputError

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


def check_port_free(address: str, port: int) -> None:
    """An InputError when ADDRESS:PORT is already served, said before anything else is printed or started."""
    import errno
    import socket

    if not 1 <= port <= 65535:
        raise InputError(f"--port {port}: expected 1..65535")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed server's TIME_WAIT is not "served"
        try:
            probe.bind((address, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise InputError(f"--port {port}: {address}:{port} is already served by another process; stop it or "
                                 "choose another --port") from None
            raise InputError(f"--address {address!r} --port {port}: cannot listen there ({error.strerror})") from None


STOP_GRACE_S = 10.0
"""Seconds a server gets to stop after SIGTERM before it is killed."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child is killed when the CLI dies, even by SIGKILL (prctl PR_SET_PDEATHSIG); a server whose
    stdout went with its parent may not manage a graceful stop, and every label is already committed."""
    import ctypes
    import os

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call
        os._exit(1)


def serve(script: Path, *, address: str, port: int, env: dict[str, str]) -> int:
    """Run ``streamlit_command`` as a child that ends with the CLI: SIGTERM, SIGINT or SIGHUP to the CLI stop the
    child (and Linux stops it when the CLI is killed outright), so no server keeps serving a study unowned."""
    import subprocess

    child = subprocess.Popen(streamlit_command(script, address=address, port=port), env=env,
                             preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    stopping: list[float] = []

    def forward(_signum: int, _frame: object) -> None:
        stopping.append(time.monotonic())
        if child.poll() is None:
            child.terminate()

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        while True:
            try:
                code = child.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if stopping and time.monotonic() - stopping[0] > STOP_GRACE_S:
                    child.kill()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if child.poll() is None:
            child.kill()
            child.wait()
    return 0 if stopping else code
